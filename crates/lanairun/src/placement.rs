//! The order in which ranks are given processors: one hardware thread of
//! every physical core before a second thread of any, so that ranks pinned
//! with a core each never share one core's pipelines while another core
//! idles (as `core`-binding in order of processor number does on a machine
//! that numbers a core's threads next to each other).
#![forbid(unsafe_code)]

/// Where a processor sits: its package and its core within the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub package: i64,
    pub core: i64,
}

/// Orders `cpus` (each with its place, if known) for round-robin pinning:
/// the first thread of each core, cores in order, then every core's second
/// thread, and so on. Processors without a known place count as cores of
/// their own.
pub fn spread(cpus: &[(usize, Option<Place>)]) -> Vec<usize> {
    let mut sorted: Vec<_> = cpus.to_vec();
    sorted.sort_by_key(|&(c, _)| c);
    let mut threads: std::collections::HashMap<(i64, i64), usize> = Default::default();
    let mut keyed: Vec<(usize, (i64, i64), usize)> = Vec::with_capacity(cpus.len());
    for &(cpu, place) in &sorted {
        // A processor of unknown place is a core alone: key it by itself.
        let key = place.map_or((i64::MAX, cpu as i64), |p| (p.package, p.core));
        let thread = threads.entry(key).or_insert(0);
        keyed.push((cpu, key, *thread));
        *thread += 1;
    }
    keyed.sort_by_key(|&(cpu, key, thread)| (thread, key, cpu));
    keyed.into_iter().map(|(cpu, _, _)| cpu).collect()
}

/// The place of processor `cpu` as Linux describes it.
pub fn place_of(cpu: usize) -> Option<Place> {
    let read = |f: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(Place {
        package: read("physical_package_id")?,
        core: read("core_id")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(package: i64, core: i64) -> Option<Place> {
        Some(Place { package, core })
    }

    #[test]
    fn siblings_numbered_together_are_spread() {
        // 4 cores of 2 threads, a core's threads numbered next to each other.
        let cpus: Vec<_> = (0..8).map(|c| (c, at(0, (c / 2) as i64))).collect();
        assert_eq!(spread(&cpus), vec![0, 2, 4, 6, 1, 3, 5, 7]);
    }

    #[test]
    fn siblings_numbered_apart_keep_their_order() {
        // Linux's usual x86 numbering: cpu c and c + 4 share core c.
        let cpus: Vec<_> = (0..8).map(|c| (c, at(0, (c % 4) as i64))).collect();
        assert_eq!(spread(&cpus), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn packages_and_unknown_places() {
        let cpus = vec![
            (5, None),
            (0, at(0, 0)),
            (1, at(1, 0)),
            (2, at(0, 0)),
            (3, at(1, 0)),
            (4, None),
        ];
        // First threads: package 0's core, package 1's core, then the two
        // unknown ones; then the second threads.
        assert_eq!(spread(&cpus), vec![0, 1, 4, 5, 2, 3]);
    }

    #[test]
    fn a_subset_of_processors() {
        let cpus = vec![(3, at(0, 1)), (6, at(0, 0)), (7, at(0, 1))];
        assert_eq!(spread(&cpus), vec![6, 3, 7]);
    }
}
