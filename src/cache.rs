//! A bounded cache: the least recently used entries go first, beyond a
//! count and beyond a total weight in bytes. Every cache the function keeps
//! across requests (compiled scripts, regex programs, OCI tags and
//! artifacts) is one, so none can grow without bound.

/// What a cache entry weighs, for [`Bounded`].
pub trait Weight {
    /// The bytes it takes, roughly.
    fn weight(&self) -> usize;
}

/// A map that forgets its least recently used entries beyond a count and
/// a total weight; an entry heavier than the whole budget is not kept.
#[derive(Debug)]
pub struct Bounded<T> {
    entries: lru::LruCache<String, (T, usize)>,
    weight: usize,
    max_entries: usize,
    max_weight: usize,
}

impl<T: Weight + Clone> Bounded<T> {
    /// An empty map of at most `max_entries` entries weighing `max_weight`.
    pub fn new(max_entries: usize, max_weight: usize) -> Self {
        Bounded {
            entries: lru::LruCache::unbounded(),
            weight: 0,
            max_entries,
            max_weight,
        }
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value under `key`, now the most recently used.
    pub fn get(&mut self, key: &str) -> Option<T> {
        self.entries.get(key).map(|(v, _)| v.clone())
    }

    /// The value under `key`, inserting `value` if there is none.
    pub fn get_or_insert(&mut self, key: String, value: T) -> T {
        if let Some(existing) = self.get(&key) {
            return existing;
        }
        self.insert(key, value.clone());
        value
    }

    /// Keeps `value` under `key`, forgetting older entries as needed.
    pub fn insert(&mut self, key: String, value: T) {
        let weight = value.weight() + key.len();
        if let Some((_, old)) = self.entries.pop(&key) {
            self.weight -= old;
        }
        if weight > self.max_weight {
            return;
        }
        self.weight += weight;
        self.entries.put(key, (value, weight));
        while self.entries.len() > self.max_entries || self.weight > self.max_weight {
            match self.entries.pop_lru() {
                Some((_, (_, w))) => self.weight -= w,
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Weight for usize {
        fn weight(&self) -> usize {
            *self
        }
    }

    #[test]
    fn the_least_recently_used_entries_go_beyond_the_count_or_the_weight() {
        let mut cache = Bounded::new(3, 100);
        for (key, weight) in [("a", 10), ("b", 10), ("c", 10)] {
            cache.insert(key.to_owned(), weight);
        }
        assert_eq!(cache.get("a"), Some(10));
        cache.insert("d".to_owned(), 10);
        assert_eq!(cache.get("b"), None, "b was the least recently used");
        // Keys weigh their length too: 11 + 11 + 11 + 71 passes 100.
        cache.insert("e".to_owned(), 70);
        assert_eq!(cache.get("c"), None, "c went for the weight");
        assert_eq!(cache.get("a"), Some(10), "a was used after c");
        assert_eq!(cache.get("e"), Some(70));
        cache.insert("huge".to_owned(), 1000);
        assert_eq!(cache.get("huge"), None, "heavier than the budget: not kept");
        assert_eq!(cache.get("e"), Some(70), "and nothing evicted for it");
    }
}
