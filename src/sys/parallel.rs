//! One bounded parallel map for every worker pool of the engine: copying
//! into scratch copies and carried files, checking out workspaces, recording
//! proposals.
//!
//! Owns: running one function over a list of items on at most a given number
//! of scoped threads (the calling thread is one of them), returning the
//! results in the order of the items, and turning a worker's panic into the
//! caller's error for the item it was working on (`panicked()`: a
//! `delegate::internal` error for every caller today).
//! Never: decides how many threads a job deserves (callers say, see
//! [`threads`]); touches a repository or the filesystem; stops the other
//! items when one fails (each item's result is its own); has an error type
//! of its own (the items' error is the caller's, whatever it is).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// The cores this process may use, at least 1 and at most `at_most`.
pub fn threads(at_most: usize) -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, at_most.max(1))
}

/// `f` over every item, on at most `threads` threads (never more than there
/// are items; 0 counts as 1), each result at its item's position. Items are
/// handed out one at a time, so a slow item does not hold up a queue behind
/// it. A panic in `f` is caught and becomes `panicked()` for that item; the
/// other items go on.
pub fn map<T, R, E, F>(
    items: impl IntoIterator<Item = T>,
    threads: usize,
    panicked: fn() -> E,
    f: F,
) -> Vec<Result<R, E>>
where
    T: Send,
    R: Send,
    E: Send,
    F: Fn(T) -> Result<R, E> + Sync,
{
    let queue: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    let n = queue.len();
    if n == 0 {
        return Vec::new();
    }
    let workers = threads.clamp(1, n);
    let queue = Mutex::new(queue.into_iter());
    let work = || {
        let mut done = Vec::new();
        loop {
            // The lock is never held while `f` runs, so it cannot be
            // poisoned by a panic in `f`; take it back anyway if it were.
            let next = match queue.lock() {
                Ok(mut q) => q.next(),
                Err(poisoned) => poisoned.into_inner().next(),
            };
            let Some((i, item)) = next else { break };
            let r = catch_unwind(AssertUnwindSafe(|| f(item))).unwrap_or_else(|_| Err(panicked()));
            done.push((i, r));
        }
        done
    };
    let mut slots: Vec<Option<Result<R, E>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        let mine = work();
        let theirs = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default());
        for (i, r) in theirs.chain(mine) {
            slots[i] = Some(r);
        }
    });
    // An item without a result was taken by a thread that died outside `f`.
    slots
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(panicked())))
        .collect()
}

/// [`map`], then the results, or the error of the first item (in item
/// order) that failed.
pub fn try_map<T, R, E, F>(
    items: impl IntoIterator<Item = T>,
    threads: usize,
    panicked: fn() -> E,
    f: F,
) -> Result<Vec<R>, E>
where
    T: Send,
    R: Send,
    E: Send,
    F: Fn(T) -> Result<R, E> + Sync,
{
    map(items, threads, panicked, f).into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Code, Error, Result};
    use std::collections::HashSet;

    fn boom() -> Error {
        Error::state(Code::Internal, "a test thread panicked", "report this bug")
    }

    #[test]
    fn order_is_kept() {
        // Uneven work, so items finish out of order.
        let out = try_map(0..200u64, 4, boom, |i| {
            let mut x = 0u64;
            for k in 0..((200 - i) * 500) {
                x = x.wrapping_add(k);
            }
            std::hint::black_box(x);
            Ok(i * 2)
        })
        .unwrap();
        assert_eq!(out, (0..200).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_panic_becomes_an_internal_error_for_its_item_only() {
        let out = map(0..10, 3, boom, |i| {
            if i == 3 {
                panic!("test panic in item 3");
            }
            Ok(i)
        });
        assert_eq!(out.len(), 10);
        for (i, r) in out.iter().enumerate() {
            match r {
                Ok(v) => assert_eq!(*v, i),
                Err(e) => {
                    assert_eq!(i, 3);
                    assert_eq!(e.code, Code::Internal);
                    assert_eq!(e.message, "a test thread panicked");
                }
            }
        }
        assert!(out[3].is_err());
        let first = try_map(0..10, 3, boom, |i| {
            if i >= 5 {
                panic!("test panic in item {i}");
            }
            Ok(i)
        });
        assert_eq!(first.unwrap_err().code, Code::Internal);
    }

    #[test]
    fn zero_items() {
        let out = map(Vec::<u8>::new(), 4, boom, |_| -> Result<u8> {
            panic!("never called")
        });
        assert!(out.is_empty());
        assert_eq!(try_map(0..0, 0, boom, Ok).unwrap(), Vec::<i32>::new());
    }

    #[test]
    fn more_threads_than_items_uses_at_most_one_per_item() {
        let seen = Mutex::new(HashSet::new());
        let out = try_map(vec!["a", "b", "c"], 64, boom, |s| {
            seen.lock().unwrap().insert(std::thread::current().id());
            Ok(s.to_uppercase())
        })
        .unwrap();
        assert_eq!(out, ["A", "B", "C"]);
        assert!(seen.lock().unwrap().len() <= 3);
        // 0 threads means the calling thread alone.
        let caller = std::thread::current().id();
        let out = try_map(1..=3, 0, boom, |i| {
            assert_eq!(std::thread::current().id(), caller);
            Ok(i)
        })
        .unwrap();
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn items_are_moved_in() {
        let owned: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        let out = try_map(owned, 2, boom, |s: String| Ok(s + "!")).unwrap();
        assert_eq!(out, ["0!", "1!", "2!", "3!", "4!"]);
    }
}
