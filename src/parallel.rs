//! Independent work on every core: reading and parsing thousands of config fragments,
//! evaluating the rules of a pack over the same facts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

pub fn cores() -> usize {
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

/// How far the helper threads may run ahead of the consumer, per core: bounds the memory
/// held by results waiting their turn.
const AHEAD_PER_CORE: usize = 32;

/// `produce(i, item)` of each item on every core, handed to `consume` on the calling
/// thread in the items' order, each as soon as it and those before it are ready: the
/// consumer works while later items are still being produced, and produces items itself
/// while it has nothing to consume (one thread per core, none idle). Stops at the first
/// error of `consume` (later items are not consumed).
pub fn pipeline<T: Sync, R: Send, E>(
    items: &[T],
    produce: impl Fn(usize, &T) -> R + Sync,
    mut consume: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let helpers = cores().min(items.len()).saturating_sub(1);
    if helpers == 0 {
        return items.iter().enumerate().try_for_each(|(i, item)| consume(produce(i, item)));
    }
    let next = AtomicUsize::new(0);
    let turn = Turn { ahead: AHEAD_PER_CORE * (helpers + 1), ..Turn::default() };
    let (produce, next, turn) = (&produce, &next, &turn);
    std::thread::scope(|scope| {
        let (sender, results) = mpsc::channel();
        for _ in 0..helpers {
            let sender = sender.clone();
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= items.len() || !turn.wait(i) || sender.send((i, produce(i, &items[i]))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut waiting = HashMap::new();
        let outcome = (|| {
            for expected in 0..items.len() {
                let result = loop {
                    if let Some(result) = waiting.remove(&expected) {
                        break result;
                    }
                    match results.try_recv() {
                        Ok((i, result)) => {
                            waiting.insert(i, result);
                            continue;
                        }
                        Err(mpsc::TryRecvError::Empty) => {}
                        // every helper is gone, so one died (the scope re-raises its panic): the
                        // unclaimed items are produced here; if all are claimed, `expected` died
                        // with its helper
                        Err(mpsc::TryRecvError::Disconnected) if next.load(Ordering::Relaxed) < items.len() => {}
                        Err(mpsc::TryRecvError::Disconnected) => return Ok(()),
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i < items.len() {
                        waiting.insert(i, produce(i, &items[i]));
                    } else if let Ok((i, result)) = results.recv() {
                        waiting.insert(i, result);
                    }
                };
                consume(result)?;
                turn.advance(expected + 1);
            }
            Ok(())
        })();
        // on an error, release the helpers waiting for their turn (the scope joins them)
        turn.stop();
        outcome
    })
}

/// How far the consumer has got, for helpers that must not run too far ahead of it.
#[derive(Default)]
struct Turn {
    ahead: usize,
    consumed: AtomicUsize,
    stopped: AtomicBool,
    /// Helpers asleep in `wait` (the consumer wakes them only then: a wake is a system call).
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    woken: Condvar,
}

impl Turn {
    /// Blocks until item `i` is fewer than `ahead` items past the consumer; false when stopped.
    fn wait(&self, i: usize) -> bool {
        let ready = || i < self.consumed.load(Ordering::SeqCst) + self.ahead || self.stopped.load(Ordering::SeqCst);
        if !ready() {
            let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.sleeping.fetch_add(1, Ordering::SeqCst);
            while !ready() {
                guard = self.woken.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
        }
        !self.stopped.load(Ordering::SeqCst)
    }

    // SeqCst: a sleeper's count-then-check and this store-then-count must not pass each other.
    fn advance(&self, consumed: usize) {
        self.consumed.store(consumed, Ordering::SeqCst);
        self.wake();
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if self.sleeping.load(Ordering::SeqCst) > 0 {
            // taking the lock orders this wake after the sleeper's last check
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.woken.notify_all();
        }
    }
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
