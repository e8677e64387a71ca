//! Connections per peer: beside the global cap, each client address may hold only so many
//! connections, so that one client's idle sockets (which the header deadline closes only
//! after `[api] header_read_timeout`) cannot take every place from the others.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};

/// What one client's connections are counted by: its IPv4 address, or the /64 of its IPv6
/// address (one host usually holds a whole /64, so counting single IPv6 addresses would
/// give it 2^64 allowances). An IPv4-mapped IPv6 address counts as the IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Peer(IpAddr);

impl Peer {
    pub fn of(ip: IpAddr) -> Peer {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Peer(IpAddr::V4(v4)),
            IpAddr::V6(v6) => {
                let network = u128::from(v6) & !u128::from(u64::MAX);
                Peer(IpAddr::V6(Ipv6Addr::from(network)))
            }
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => v4.fmt(f),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// The open connections of every peer that has one (so at most `max_connections` entries).
pub struct PeerSlots {
    limit: usize,
    open: Mutex<HashMap<Peer, usize>>,
}

/// One connection's place in its peer's allowance, given back when dropped.
pub struct PeerSlot {
    slots: Arc<PeerSlots>,
    peer: Peer,
}

impl PeerSlots {
    /// At most `limit` (at least 1) connections per peer.
    pub fn new(limit: usize) -> Arc<PeerSlots> {
        Arc::new(PeerSlots {
            limit: limit.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more connection of `peer`, if it has fewer than the limit open.
    pub fn try_take(self: &Arc<Self>, peer: Peer) -> Option<PeerSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(peer).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            slots: Arc::clone(self),
            peer,
        })
    }

    /// Connections `peer` holds now.
    pub fn open(&self, peer: Peer) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&peer).copied().unwrap_or(0)
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .slots
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Entry::Occupied(mut e) = open.entry(self.peer) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn a_peer_gets_its_limit_and_its_places_back() {
        let slots = PeerSlots::new(2);
        let a = Peer::of(ip("127.0.0.1"));
        let b = Peer::of(ip("127.0.0.2"));
        let first = slots.try_take(a).expect("first");
        let _second = slots.try_take(a).expect("second");
        assert!(slots.try_take(a).is_none(), "a third from the same peer");
        assert!(slots.try_take(b).is_some(), "another peer is not affected");
        drop(first);
        assert_eq!(slots.open(a), 1);
        assert!(
            slots.try_take(a).is_some(),
            "a place given back is taken again"
        );
    }

    #[test]
    fn the_map_forgets_peers_without_connections() {
        let slots = PeerSlots::new(1);
        let a = Peer::of(ip("192.0.2.1"));
        drop(slots.try_take(a));
        assert!(slots.open.lock().expect("lock").is_empty());
    }

    #[test]
    fn ipv6_peers_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            Peer::of(ip("2001:db8:1:2:aaaa::1")),
            Peer::of(ip("2001:db8:1:2:bbbb::2"))
        );
        assert_ne!(
            Peer::of(ip("2001:db8:1:2::1")),
            Peer::of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(Peer::of(ip("::ffff:192.0.2.7")), Peer::of(ip("192.0.2.7")));
        assert_eq!(
            Peer::of(ip("2001:db8:1:2::1")).to_string(),
            "2001:db8:1:2::/64"
        );
    }
}
