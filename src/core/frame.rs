//! Yjs-like binary frames: random bytes of 50–450 B whose first byte is 0, 1 or 2 (a Yjs sync/awareness
//! message type; never 0xFF or `{`, which the app would parse as an asset message), carrying who sent
//! them and when, so receivers can count fan-out and measure delivery latency.
//!
//! ```text
//! [0] kind 0..=2  [1..5] run nonce  [5..9] sender  [9..13] seq  [13..21] sent at (µs since epoch)  [21..] random
//! ```

use rand::Rng;

pub const MIN_LEN: usize = 50;
pub const MAX_LEN: usize = 450;
const HEADER: usize = 21;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub sender: u32,
    pub seq: u32,
    pub sent_us: u64,
}

/// A frame of random size in MIN_LEN..=MAX_LEN.
pub fn encode(rng: &mut impl Rng, nonce: u32, stamp: Stamp) -> Vec<u8> {
    let len = rng.gen_range(MIN_LEN..=MAX_LEN);
    let mut f = vec![0u8; len];
    rng.fill(&mut f[HEADER..]);
    f[0] = rng.gen_range(0..=2);
    f[1..5].copy_from_slice(&nonce.to_be_bytes());
    f[5..9].copy_from_slice(&stamp.sender.to_be_bytes());
    f[9..13].copy_from_slice(&stamp.seq.to_be_bytes());
    f[13..21].copy_from_slice(&stamp.sent_us.to_be_bytes());
    f
}

/// The stamp of one of this run's frames; `None` for anything else relayed into the room.
pub fn decode(f: &[u8], nonce: u32) -> Option<Stamp> {
    if f.len() < HEADER || f[0] > 2 || f[1..5] != nonce.to_be_bytes() {
        return None;
    }
    let u32_at = |i: usize| u32::from_be_bytes(f[i..i + 4].try_into().unwrap());
    Some(Stamp {
        sender: u32_at(5),
        seq: u32_at(9),
        sent_us: u64::from_be_bytes(f[13..21].try_into().unwrap()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_shape() {
        let mut rng = rand::thread_rng();
        for i in 0..500u32 {
            let s = Stamp {
                sender: i,
                seq: i * 3,
                sent_us: 1_700_000_000_000_000 + i as u64,
            };
            let f = encode(&mut rng, 0xDEAD_BEEF, s);
            assert!((MIN_LEN..=MAX_LEN).contains(&f.len()));
            assert!(f[0] <= 2, "never 0xFF or '{{'");
            assert_eq!(decode(&f, 0xDEAD_BEEF), Some(s));
            assert_eq!(decode(&f, 1), None);
        }
        assert_eq!(decode(&[0, 1, 2], 0), None);
    }
}
