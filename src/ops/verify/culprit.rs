//! The culprit search of verified integration (design §3.10): a pure
//! function over an oracle that says which sets of tasks pass, with
//! `--verify-jobs` evaluating the sets the sequential search would reach, up
//! to J at once.
//! Never: runs anything, touches the repository or the file system.

use std::collections::{HashMap, VecDeque};

use crate::error::Result;

/// What the search found. Sets are positions `0..n` in task order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Found {
    /// The set that lands (known to pass), in order.
    pub landed: Vec<usize>,
    /// Each culprit with the index (in `runs`) of the run that failed.
    pub rejected: Vec<(usize, usize)>,
    /// CMD failed with no task at all: nothing lands.
    pub fails_without_tasks: bool,
    /// Every set evaluated, in the order evaluated, with "passed".
    pub runs: Vec<(Vec<usize>, bool)>,
}

enum Step {
    Need(Vec<usize>),
    Done {
        landed: Vec<usize>,
        rejected: Vec<(usize, Vec<usize>)>,
        fails_without_tasks: bool,
    },
}

/// The sequential procedure of design §3.10, replayed over the answers
/// known so far: the next set it needs, or its result.
fn drive(n: usize, known: &HashMap<Vec<usize>, bool>) -> Step {
    macro_rules! ask {
        ($set:expr) => {{
            let set: Vec<usize> = $set;
            match known.get(&set) {
                Some(&v) => v,
                None => return Step::Need(set),
            }
        }};
    }
    let all: Vec<usize> = (0..n).collect();
    if ask!(all.clone()) {
        return Step::Done {
            landed: all,
            rejected: Vec::new(),
            fails_without_tasks: false,
        };
    }
    if !ask!(Vec::new()) {
        return Step::Done {
            landed: Vec::new(),
            rejected: Vec::new(),
            fails_without_tasks: true,
        };
    }
    // `g` passes; `g + rest` fails.
    let mut g: Vec<usize> = Vec::new();
    let mut rest: Vec<usize> = all;
    let mut rejected = Vec::new();
    loop {
        // The smallest k with g + rest[..k] failing: k = rest.len() fails,
        // k = 0 passes.
        let (mut lo, mut hi) = (0usize, rest.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let set: Vec<usize> = g.iter().chain(&rest[..mid]).copied().collect();
            if ask!(set) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let failing: Vec<usize> = g.iter().chain(&rest[..hi]).copied().collect();
        rejected.push((rest[hi - 1], failing));
        g.extend_from_slice(&rest[..hi - 1]);
        rest = rest[hi..].to_vec();
        if rest.is_empty() {
            return Step::Done {
                landed: g,
                rejected,
                fails_without_tasks: false,
            };
        }
        let set: Vec<usize> = g.iter().chain(&rest).copied().collect();
        if ask!(set.clone()) {
            return Step::Done {
                landed: set,
                rejected,
                fails_without_tasks: false,
            };
        }
    }
}

/// The sets the sequential search would reach next, nearest first: the one
/// it needs now, then those it would need after each answer, up to `jobs`.
fn frontier(n: usize, known: &HashMap<Vec<usize>, bool>, jobs: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut queue: VecDeque<HashMap<Vec<usize>, bool>> = VecDeque::new();
    queue.push_back(known.clone());
    while let Some(k) = queue.pop_front() {
        if out.len() >= jobs {
            break;
        }
        let Step::Need(set) = drive(n, &k) else {
            continue;
        };
        if !out.contains(&set) {
            out.push(set.clone());
        }
        for answer in [false, true] {
            let mut next = k.clone();
            next.insert(set.clone(), answer);
            queue.push_back(next);
        }
    }
    out.truncate(jobs.max(1));
    out
}

/// Runs CMD on each set given (positions in task order), saying which passed.
pub type Oracle<'a> = dyn FnMut(&[Vec<usize>]) -> Result<Vec<bool>> + 'a;

/// Find the culprits among `n` tasks (design §3.10): `eval` runs CMD on
/// each of the sets it is given (up to `jobs` at once) and says which
/// passed. With `jobs` 1 this costs at most `2 + m·(⌈log2 n⌉ + 1)` runs for
/// `m` culprits; with more, the sets the sequential search would reach are
/// evaluated ahead, and the outcome is the same given the same answers.
pub fn search(n: usize, jobs: usize, eval: &mut Oracle<'_>) -> Result<Found> {
    let mut known: HashMap<Vec<usize>, bool> = HashMap::new();
    let mut runs: Vec<(Vec<usize>, bool)> = Vec::new();
    loop {
        if n == 0 {
            return Ok(Found::default());
        }
        match drive(n, &known) {
            Step::Done {
                landed,
                rejected,
                fails_without_tasks,
            } => {
                let rejected = rejected
                    .into_iter()
                    .map(|(culprit, failing)| {
                        let run = runs.iter().position(|(s, _)| *s == failing).unwrap_or(0);
                        (culprit, run)
                    })
                    .collect();
                return Ok(Found {
                    landed,
                    rejected,
                    fails_without_tasks,
                    runs,
                });
            }
            Step::Need(_) => {
                let sets = frontier(n, &known, jobs);
                let answers = eval(&sets)?;
                for (set, passed) in sets.into_iter().zip(answers) {
                    known.insert(set.clone(), passed);
                    runs.push((set, passed));
                }
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A fake CMD: fails when a set holds any culprit (monotonic), or as `fails` says.
    fn run_search(n: usize, culprits: &[usize], jobs: usize) -> (Found, usize) {
        let mut calls = 0usize;
        let found = search(n, jobs, &mut |sets| {
            calls += sets.len();
            assert!(sets.len() <= jobs);
            Ok(sets
                .iter()
                .map(|s| !s.iter().any(|t| culprits.contains(t)))
                .collect())
        })
        .unwrap();
        (found, calls)
    }

    fn bound(n: usize, m: usize) -> usize {
        let log = if n <= 1 {
            0
        } else {
            (usize::BITS - (n - 1).leading_zeros()) as usize
        };
        2 + m * (log + 1)
    }

    /// Every choice of m culprits among n tasks, for n = 1..16, m = 0..3.
    fn subsets(n: usize, m: usize) -> Vec<Vec<usize>> {
        fn go(start: usize, n: usize, m: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if cur.len() == m {
                out.push(cur.clone());
                return;
            }
            for i in start..n {
                cur.push(i);
                go(i + 1, n, m, cur, out);
                cur.pop();
            }
        }
        let mut out = Vec::new();
        go(0, n, m, &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn finds_exactly_the_culprits_within_the_bound() {
        for n in 1..=16 {
            for m in 0..=3.min(n) {
                for culprits in subsets(n, m) {
                    let (found, calls) = run_search(n, &culprits, 1);
                    let got: Vec<usize> = found.rejected.iter().map(|r| r.0).collect();
                    assert_eq!(got, culprits, "n={n} culprits={culprits:?}");
                    let landed: Vec<usize> = (0..n).filter(|t| !culprits.contains(t)).collect();
                    assert_eq!(found.landed, landed);
                    assert!(!found.fails_without_tasks);
                    assert_eq!(calls, found.runs.len());
                    assert!(
                        calls <= bound(n, m),
                        "n={n} culprits={culprits:?}: {calls} runs > {}",
                        bound(n, m)
                    );
                    // Each rejection names a run that failed with the culprit in it.
                    for &(c, run) in &found.rejected {
                        let (set, passed) = &found.runs[run];
                        assert!(!passed && set.contains(&c));
                    }
                }
            }
        }
    }

    #[test]
    fn eight_tasks_one_culprit_cost_at_most_six_runs() {
        for c in 0..8 {
            let (_, calls) = run_search(8, &[c], 1);
            assert!(calls <= 6, "culprit {c}: {calls}");
        }
    }

    #[test]
    fn source_alone_failing_lands_nothing() {
        let mut calls = 0;
        let found = search(5, 1, &mut |sets| {
            calls += sets.len();
            Ok(vec![false; sets.len()])
        })
        .unwrap();
        assert!(found.fails_without_tasks);
        assert!(found.landed.is_empty() && found.rejected.is_empty());
        assert_eq!(calls, 2);
        assert_eq!(found.runs[1].0, Vec::<usize>::new());
    }

    #[test]
    fn an_interaction_rejects_the_later_task() {
        // Fails when 1 and 3 are both present.
        let found = search(5, 1, &mut |sets| {
            Ok(sets
                .iter()
                .map(|s| !(s.contains(&1) && s.contains(&3)))
                .collect())
        })
        .unwrap();
        assert_eq!(found.rejected.iter().map(|r| r.0).collect::<Vec<_>>(), [3]);
        assert_eq!(found.landed, [0, 1, 2, 4]);
    }

    #[test]
    fn parallel_jobs_give_the_sequential_outcome() {
        // Monotonic and non-monotonic (deterministic) oracles alike.
        type Fake = Box<dyn Fn(&[usize]) -> bool>;
        let oracles: Vec<Fake> = vec![
            Box::new(|s| !s.contains(&2) && !s.contains(&7)),
            Box::new(|s| !(s.contains(&1) && s.contains(&5))),
            Box::new(|s| s.len() % 3 != 2),
            Box::new(|s| s.iter().sum::<usize>() % 4 != 1),
            Box::new(|_| true),
            Box::new(|s| s.is_empty()),
        ];
        for (i, oracle) in oracles.iter().enumerate() {
            for n in 1..=12 {
                let seq = search(n, 1, &mut |sets| {
                    Ok(sets.iter().map(|s| oracle(s)).collect())
                })
                .unwrap();
                for jobs in [2, 3, 4, 8] {
                    let par = search(n, jobs, &mut |sets| {
                        assert!(sets.len() <= jobs);
                        Ok(sets.iter().map(|s| oracle(s)).collect())
                    })
                    .unwrap();
                    assert_eq!(par.landed, seq.landed, "oracle {i} n={n} J={jobs}");
                    assert_eq!(
                        par.rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
                        seq.rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
                        "oracle {i} n={n} J={jobs}"
                    );
                    assert_eq!(par.fails_without_tasks, seq.fails_without_tasks);
                    // Every set the sequential search asked was asked.
                    for (s, _) in &seq.runs {
                        assert!(par.runs.iter().any(|(p, _)| p == s));
                    }
                }
            }
        }
    }

    #[test]
    fn parallel_rounds_are_fewer() {
        let mut rounds = 0;
        let _ = search(16, 4, &mut |sets| {
            rounds += 1;
            Ok(sets.iter().map(|s| !s.contains(&9)).collect())
        })
        .unwrap();
        let mut seq = 0;
        let _ = search(16, 1, &mut |sets| {
            seq += 1;
            Ok(sets.iter().map(|s| !s.contains(&9)).collect())
        })
        .unwrap();
        assert!(rounds < seq, "{rounds} vs {seq}");
    }
}
