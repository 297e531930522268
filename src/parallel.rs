//! Independent work on every core: reading and parsing thousands of config fragments,
//! evaluating the rules of a pack over the same facts.

/// `f` of each item, in order, computed on every core. Items are dealt out in turn (item i
/// to thread i mod n), so neighbours of similar cost (two heavy rules of one area) do not
/// land on the same thread.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len());
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

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u32> = (0..1000).collect();
        assert_eq!(super::on_every_core(&items, |i| i * 2), items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(super::on_every_core(&[1, 2], |i| i + 1), [2, 3]);
    }
}
