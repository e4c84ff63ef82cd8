//! Placement of ranks on emulated nodes, and MPICH's `PMI_process_mapping`.

/// Ranks per node: `ranks` split into `nodes` blocks, the first
/// `ranks % nodes` nodes taking one extra.
pub fn ranks_per_node(ranks: u32, nodes: u32) -> Vec<u32> {
    let nodes = nodes.max(1);
    (0..nodes)
        .map(|i| ranks / nodes + u32::from(i < ranks % nodes))
        .collect()
}

/// Ranks per node with `per_node` on each (`-ppn`), the last node taking
/// what is left.
pub fn ranks_at_most_per_node(ranks: u32, per_node: u32) -> Vec<u32> {
    let per_node = per_node.max(1);
    (0..ranks.div_ceil(per_node))
        .map(|i| per_node.min(ranks - i * per_node))
        .collect()
}

/// MPICH's block description `(vector,(firstnode,nodecount,ranks_per_node),...)`
/// of nodes holding `counts[i]` consecutive ranks each, one triple per run
/// of consecutive nodes with the same number of ranks.
pub fn process_mapping(counts: &[u32]) -> String {
    let mut out = String::from("(vector");
    let mut start = 0;
    while start < counts.len() {
        let run = counts[start..]
            .iter()
            .take_while(|&&c| c == counts[start])
            .count();
        out.push_str(&format!(",({},{},{})", start, run, counts[start]));
        start += run;
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_strings() {
        assert_eq!(process_mapping(&ranks_per_node(1, 1)), "(vector,(0,1,1))");
        assert_eq!(process_mapping(&ranks_per_node(3, 1)), "(vector,(0,1,3))");
        assert_eq!(
            process_mapping(&ranks_per_node(5, 2)),
            "(vector,(0,1,3),(1,1,2))"
        );
        assert_eq!(process_mapping(&ranks_per_node(4, 2)), "(vector,(0,2,2))");
        assert_eq!(
            process_mapping(&ranks_per_node(7, 3)),
            "(vector,(0,1,3),(1,2,2))"
        );
        assert_eq!(
            process_mapping(&ranks_per_node(8, 3)),
            "(vector,(0,2,3),(2,1,2))"
        );
        assert_eq!(process_mapping(&ranks_per_node(6, 6)), "(vector,(0,6,1))");
        assert_eq!(
            process_mapping(&ranks_per_node(64, 5)),
            "(vector,(0,4,13),(4,1,12))"
        );
        // -ppn: full nodes, then the rest.
        assert_eq!(ranks_at_most_per_node(8, 3), vec![3, 3, 2]);
        assert_eq!(ranks_at_most_per_node(8, 5), vec![5, 3]);
        assert_eq!(ranks_at_most_per_node(4, 4), vec![4]);
        assert_eq!(ranks_at_most_per_node(2, 9), vec![2]);
        assert_eq!(process_mapping(&[3, 3, 2]), "(vector,(0,2,3),(2,1,2))");
        assert_eq!(process_mapping(&[5, 3]), "(vector,(0,1,5),(1,1,3))");
    }

    #[test]
    fn counts_are_balanced_blocks() {
        for ranks in 1..40u32 {
            for nodes in 1..=ranks {
                let counts = ranks_per_node(ranks, nodes);
                assert_eq!(counts.len(), nodes as usize);
                assert_eq!(counts.iter().sum::<u32>(), ranks);
                // The larger nodes come first, and sizes differ by at most one.
                assert!(
                    counts.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1),
                    "{counts:?}"
                );
                // The mapping string lists the same counts, expanded.
                let m = process_mapping(&counts);
                let inner = m
                    .strip_prefix("(vector,")
                    .unwrap()
                    .strip_suffix(')')
                    .unwrap();
                let mut expanded = Vec::new();
                let mut next_node = 0;
                for triple in inner.split("),(") {
                    let t: Vec<u32> = triple
                        .trim_matches(|c| c == '(' || c == ')')
                        .split(',')
                        .map(|x| x.parse().unwrap())
                        .collect();
                    assert_eq!(t[0], next_node);
                    next_node += t[1];
                    for _ in 0..t[1] {
                        expanded.push(t[2]);
                    }
                }
                assert_eq!(expanded, counts);
            }
        }
    }
}
