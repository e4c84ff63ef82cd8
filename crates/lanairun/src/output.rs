//! Forwarding of a rank's stdout or stderr to the launcher's, optionally
//! with every line prefixed by `[rank] `.

use std::io::Write;

/// One stream of one rank.
#[derive(Debug)]
pub struct Forwarder {
    /// `Some("[R] ")` with --tag-output.
    tag: Option<String>,
    /// With a tag: the unfinished last line.
    partial: Vec<u8>,
}

impl Forwarder {
    pub fn new(rank: usize, tag_output: bool) -> Self {
        Self {
            tag: tag_output.then(|| format!("[{rank}] ")),
            partial: Vec::new(),
        }
    }

    /// Forwards `data`. Untagged bytes go out at once; tagged ones a line at a time.
    pub fn push(&mut self, data: &[u8], out: &mut impl Write) {
        let Some(tag) = &self.tag else {
            emit(out, data);
            return;
        };
        self.partial.extend_from_slice(data);
        let Some(last_nl) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let rest = self.partial.split_off(last_nl + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        let mut buf = Vec::with_capacity(done.len() + tag.len() * 4);
        for line in done.split_inclusive(|&b| b == b'\n') {
            buf.extend_from_slice(tag.as_bytes());
            buf.extend_from_slice(line);
        }
        emit(out, &buf);
    }

    /// The stream ended: a tagged unfinished line goes out with a newline.
    pub fn finish(&mut self, out: &mut impl Write) {
        if let Some(tag) = &self.tag {
            if !self.partial.is_empty() {
                let mut buf = tag.as_bytes().to_vec();
                buf.append(&mut self.partial);
                buf.push(b'\n');
                emit(out, &buf);
            }
        }
    }
}

/// Writes and flushes; a closed launcher stdout (e.g. `| head`) just drops output.
fn emit(out: &mut impl Write, data: &[u8]) {
    let _ = out.write_all(data).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_passes_bytes_through() {
        let mut f = Forwarder::new(3, false);
        let mut out = Vec::new();
        f.push(b"abc", &mut out);
        f.push(b"def\ng", &mut out);
        f.finish(&mut out);
        assert_eq!(out, b"abcdef\ng");
    }

    #[test]
    fn tagged_buffers_partial_lines() {
        let mut f = Forwarder::new(12, true);
        let mut out = Vec::new();
        f.push(b"hel", &mut out);
        assert!(out.is_empty());
        f.push(b"lo\nwor", &mut out);
        assert_eq!(out, b"[12] hello\n");
        f.push(b"ld\n\nx\ny", &mut out);
        assert_eq!(out, b"[12] hello\n[12] world\n[12] \n[12] x\n");
        f.finish(&mut out);
        assert_eq!(out, b"[12] hello\n[12] world\n[12] \n[12] x\n[12] y\n");
        f.finish(&mut out);
        assert_eq!(
            out.len(),
            b"[12] hello\n[12] world\n[12] \n[12] x\n[12] y\n".len()
        );
    }
}
