"""Session fixtures for the C conformance suite: build every program with
Lanai's compiler wrapper and with Debian's mpicc.mpich."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "mpich: uses the binaries built with mpicc.mpich")
    config.addinivalue_line("markers", "slow: 8-rank runs and other long cases")


def _build_all(cc, flavor, env=None):
    built, errors = {}, []
    for name in harness.ALL_PROGRAMS:
        exe, err = harness.compile_program(cc, name, flavor, env)
        if err:
            errors.append(err)
        else:
            built[name] = exe
    return built, errors


@pytest.fixture(scope="session")
def lanai_builds():
    """Programs built with build/bin/lanaicc. A missing wrapper is an error,
    not a skip: the suite is meaningless without the library."""
    if not os.access(harness.LANAICC, os.X_OK):
        pytest.fail(
            f"{harness.LANAICC} not found: run `make` at the repository root first "
            "(it builds build/bin/lanaicc, build/bin/lanairun and build/lib/libmpi.so.12)",
            pytrace=False,
        )
    if not os.access(harness.LANAIRUN, os.X_OK):
        pytest.fail(f"{harness.LANAIRUN} not found: run `make` first", pytrace=False)
    built, errors = _build_all(harness.LANAICC, "lanai")
    if errors:
        pytest.fail("lanaicc failed to build:\n" + "\n".join(errors), pytrace=False)
    return built


@pytest.fixture(scope="session")
def mpich_builds(lanai_builds):
    """Programs built with Debian's mpicc.mpich, to be run on Lanai through
    LD_LIBRARY_PATH (the drop-in ABI promise)."""
    if not harness.have(harness.MPICH_CC):
        pytest.skip(
            f"{harness.MPICH_CC} not installed (Debian: apt install libmpich-dev); "
            "the ABI-compatibility cases need it"
        )
    built, errors = _build_all(harness.MPICH_CC, "mpich")
    if errors:
        pytest.fail("mpicc.mpich failed to build:\n" + "\n".join(errors), pytrace=False)
    return built


@pytest.fixture
def builds(request, lanai_builds):
    """The build for a test's flavor ('lanai' or 'mpich')."""
    flavor = request.node.callspec.params.get("flavor", "lanai")
    if flavor == "mpich":
        return request.getfixturevalue("mpich_builds")
    return lanai_builds
