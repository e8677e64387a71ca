//! Validated tokens, remembered for a short time so that a client's burst of requests costs
//! one round trip to Keystone. Keys are SHA-256 digests of the tokens, so the cache holds no
//! token; memory is bounded by a maximum number of entries (oldest inserted dropped first).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The cache key of a token.
pub type TokenDigest = [u8; 32];

pub fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

struct Entry<V> {
    value: V,
    valid_until: Instant,
}

struct Inner<V> {
    entries: HashMap<TokenDigest, Entry<V>>,
    /// Insertion order, for eviction; may hold keys already replaced or removed.
    order: VecDeque<TokenDigest>,
}

pub struct TokenCache<V> {
    ttl: Duration,
    capacity: usize,
    inner: Mutex<Inner<V>>,
}

impl<V: Clone> TokenCache<V> {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        TokenCache {
            ttl,
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }

    /// The remembered value, when it is still valid at `now`.
    pub fn get(&self, key: &TokenDigest, now: Instant) -> Option<V> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match inner.entries.get(key) {
            Some(e) if e.valid_until > now => Some(e.value.clone()),
            Some(_) => {
                inner.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remembers `value` until `now + ttl`, or `not_after` when that is sooner.
    pub fn insert(&self, key: TokenDigest, value: V, now: Instant, not_after: Option<Instant>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut valid_until = now + self.ttl;
        if let Some(limit) = not_after {
            valid_until = valid_until.min(limit);
        }
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while inner.entries.len() >= self.capacity {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            inner.entries.remove(&oldest);
        }
        if inner
            .entries
            .insert(key, Entry { value, valid_until })
            .is_none()
        {
            inner.order.push_back(key);
        }
        // Keys removed on expiry stay in `order`; keep it from growing past the bound.
        if inner.order.len() > self.capacity * 2 {
            let Inner { entries, order } = &mut *inner;
            order.retain(|k| entries.contains_key(k));
        }
    }

    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entries
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_served_until_its_time_is_up() {
        let c = TokenCache::new(Duration::from_secs(30), 10);
        let t0 = Instant::now();
        c.insert(digest("a"), 1, t0, None);
        assert_eq!(c.get(&digest("a"), t0 + Duration::from_secs(29)), Some(1));
        assert_eq!(c.get(&digest("a"), t0 + Duration::from_secs(30)), None);
        assert!(c.is_empty());
    }

    #[test]
    fn a_token_expiring_sooner_than_the_cache_time_is_dropped_at_its_expiry() {
        let c = TokenCache::new(Duration::from_secs(30), 10);
        let t0 = Instant::now();
        c.insert(digest("a"), 1, t0, Some(t0 + Duration::from_secs(5)));
        assert_eq!(c.get(&digest("a"), t0 + Duration::from_secs(4)), Some(1));
        assert_eq!(c.get(&digest("a"), t0 + Duration::from_secs(5)), None);
    }

    #[test]
    fn memory_is_bounded_by_dropping_the_oldest_entries() {
        let c = TokenCache::new(Duration::from_secs(30), 3);
        let t0 = Instant::now();
        for i in 0..10 {
            c.insert(digest(&format!("t{i}")), i, t0, None);
            assert!(c.len() <= 3);
        }
        assert_eq!(c.get(&digest("t9"), t0), Some(9));
        assert_eq!(c.get(&digest("t0"), t0), None);
    }

    #[test]
    fn a_zero_cache_time_caches_nothing() {
        let c = TokenCache::new(Duration::ZERO, 3);
        let t0 = Instant::now();
        c.insert(digest("a"), 1, t0, None);
        assert_eq!(c.get(&digest("a"), t0), None);
    }
}
