//! Yjs-like binary frames: random bytes of 50–450 B whose first byte is 0, 1 or 2 (a Yjs sync/awareness
//! message type; never 0xFF or `{`, which the app would parse as an asset message), carrying who sent
//! them, in which room, and when, so that receivers can count what arrives by kind (delivered, duplicated,
//! echoed to its sender, delivered into the wrong room) and measure delivery latency. The app relays the
//! payload verbatim and never decodes it (contract §2).
//!
//! ```text
//! [0] kind 0..=2  [1..5] run nonce  [5..13] room id  [13..17] sender  [17..21] seq
//! [21..29] sent at (µs since epoch)  [29..] random
//! ```

use rand::Rng;

pub const MIN_LEN: usize = 50;
pub const MAX_LEN: usize = 450;
const HEADER: usize = 29;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The sender's room: [`room_id`] of its project uuid.
    pub room: u64,
    pub sender: u32,
    pub seq: u32,
    pub sent_us: u64,
}

/// A room's id in frames: FNV-1a (64 bit) of its project uuid, lowercased. A hash rather than an index,
/// so that any generator (or shard) given the same uuid stamps the same id with no shared table; two of
/// a run's rooms collide with a chance of about n²/2⁶⁵ (1e-8 for a million rooms).
pub fn room_id(project_uuid: &str) -> u64 {
    project_uuid
        .bytes()
        .map(|b| b.to_ascii_lowercase())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A frame of random size in MIN_LEN..=MAX_LEN.
pub fn encode(rng: &mut impl Rng, nonce: u32, stamp: Stamp) -> Vec<u8> {
    let len = rng.gen_range(MIN_LEN..=MAX_LEN);
    let mut f = vec![0u8; len];
    rng.fill(&mut f[HEADER..]);
    f[0] = rng.gen_range(0..=2);
    f[1..5].copy_from_slice(&nonce.to_be_bytes());
    f[5..13].copy_from_slice(&stamp.room.to_be_bytes());
    f[13..17].copy_from_slice(&stamp.sender.to_be_bytes());
    f[17..21].copy_from_slice(&stamp.seq.to_be_bytes());
    f[21..29].copy_from_slice(&stamp.sent_us.to_be_bytes());
    f
}

/// The stamp of one of this run's frames; `None` for anything else relayed into the room.
pub fn decode(f: &[u8], nonce: u32) -> Option<Stamp> {
    if f.len() < HEADER || f[0] > 2 || f[1..5] != nonce.to_be_bytes() {
        return None;
    }
    let u32_at = |i: usize| u32::from_be_bytes(f[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_be_bytes(f[i..i + 8].try_into().unwrap());
    Some(Stamp {
        room: u64_at(5),
        sender: u32_at(13),
        seq: u32_at(17),
        sent_us: u64_at(21),
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
                room: room_id(&format!("0f8fad5b-d9cb-469f-a165-7086772895{i:02}")),
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

    #[test]
    fn room_ids_differ_per_uuid_and_ignore_case() {
        let a = "0f8fad5b-d9cb-469f-a165-70867728950e";
        let b = "0f8fad5b-d9cb-469f-a165-70867728950f";
        assert_ne!(room_id(a), room_id(b));
        assert_eq!(room_id(a), room_id(&a.to_uppercase()));
        // FNV-1a's published test vector: the hash is the standard one, reproducible elsewhere.
        assert_eq!(room_id("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
