//! Independent work on every core: reading and parsing thousands of config fragments,
//! evaluating the rules of a pack over the same facts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` of each item, in order, computed on every core. Items are dealt out in turn (item i
/// to thread i mod n), so neighbours of similar cost (two heavy rules of one area) do not
/// land on the same thread.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = cores().min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    items.iter().enumerate().skip(t).step_by(threads).map(|(i, item)| (i, f(item))).collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// How far producers may run ahead of the consumer, per core: bounds the memory held by
/// results waiting their turn.
const AHEAD_PER_CORE: usize = 32;

/// `produce(i, item)` of each item on every core, handed to `consume` on the calling
/// thread in the items' order, each as soon as it and those before it are ready: the
/// consumer works while later items are still being produced. Stops at the first error of
/// `consume` (later items are not consumed).
pub fn pipeline<T: Sync, R: Send, E>(
    items: &[T],
    produce: impl Fn(usize, &T) -> R + Sync,
    mut consume: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let threads = cores().min(items.len());
    if threads <= 1 {
        return items.iter().enumerate().try_for_each(|(i, item)| consume(produce(i, item)));
    }
    let ahead = AHEAD_PER_CORE * threads;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let consumed = (Mutex::new(0usize), Condvar::new());
    let (produce, next, stop, consumed) = (&produce, &next, &stop, &consumed);
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel();
        for _ in 0..threads {
            let sender = sender.clone();
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= items.len() || !wait_for_turn(consumed, stop, i, ahead) {
                        break;
                    }
                    if sender.send((i, produce(i, &items[i]))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting = HashMap::new();
        let mut expected = 0;
        let outcome = (|| {
            for (i, result) in &results {
                waiting.insert(i, result);
                while let Some(result) = waiting.remove(&expected) {
                    consume(result)?;
                    expected += 1;
                    *consumed.0.lock().unwrap_or_else(|e| e.into_inner()) = expected;
                    consumed.1.notify_all();
                }
            }
            Ok(())
        })();
        // on an error, release the producers waiting for their turn (the scope joins them)
        stop.store(true, Ordering::Relaxed);
        consumed.1.notify_all();
        outcome
    })
}

/// Blocks until item `i` is fewer than `ahead` items past the consumer; false when stopped.
fn wait_for_turn(consumed: &(Mutex<usize>, Condvar), stop: &AtomicBool, i: usize, ahead: usize) -> bool {
    let mut done = consumed.0.lock().unwrap_or_else(|e| e.into_inner());
    while i >= *done + ahead && !stop.load(Ordering::Relaxed) {
        done = consumed.1.wait(done).unwrap_or_else(|e| e.into_inner());
    }
    !stop.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u32> = (0..1000).collect();
        assert_eq!(on_every_core(&items, |i| i * 2), items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(on_every_core(&[1, 2], |i| i + 1), [2, 3]);
    }

    #[test]
    fn a_pipeline_consumes_in_order_and_stops_at_the_first_error() {
        let items: Vec<u32> = (0..5000).collect();
        let mut seen = Vec::new();
        let outcome: Result<(), u32> = pipeline(
            &items,
            |i, item| (i as u32, *item * 2),
            |(i, doubled)| {
                seen.push(doubled);
                if i == 4000 { Err(i) } else { Ok(()) }
            },
        );
        assert_eq!(outcome, Err(4000));
        assert_eq!(seen, (0..=4000).map(|i| i * 2).collect::<Vec<_>>());
        let mut all = Vec::new();
        let keep = |item| {
            all.push(item);
            Ok::<(), ()>(())
        };
        pipeline(&items, |_, item| *item, keep).unwrap();
        assert_eq!(all, items);
    }
}
