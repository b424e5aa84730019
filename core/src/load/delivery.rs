//! What arrives, by kind. Every frame names its sender, sequence and room (`frame::Stamp`), so each
//! receiver sorts what it gets into: delivered (first arrival of a room-mate's frame), duplicated (the
//! same sender and seq again), echoed (its own frame came back, as the real app's relay does) and
//! cross-room (a frame stamped with another room). Lost is then worked out per (sender, seq) from what
//! each sender counted as sent. Pure: no I/O, unit tested here.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::frame::Stamp;

/// A set of sequence numbers: a bitmap for the dense 0.. range a sender uses, with a side set for
/// anything far beyond it (so a stray huge seq cannot allocate a huge bitmap).
#[derive(Debug, Clone, Default)]
struct SeqSet {
    bits: Vec<u64>,
    far: HashSet<u32>,
}

/// Seqs at most this far past the bitmap's end grow it; farther ones go to the side set.
const GROW_WORDS: usize = 1024;

impl SeqSet {
    /// Insert; false if it was there already.
    fn insert(&mut self, seq: u32) -> bool {
        let (w, b) = (seq as usize / 64, seq % 64);
        if w >= self.bits.len() + GROW_WORDS {
            return self.far.insert(seq);
        }
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        let fresh = self.bits[w] & (1 << b) == 0;
        self.bits[w] |= 1 << b;
        fresh
    }

    /// How many members are below `n`.
    fn count_below(&self, n: u64) -> u64 {
        let full = (n / 64) as usize;
        let mut c: u64 = self
            .bits
            .iter()
            .take(full)
            .map(|w| w.count_ones() as u64)
            .sum();
        if let Some(w) = self.bits.get(full) {
            let rem = n % 64;
            if rem > 0 {
                c += (w & ((1u64 << rem) - 1)).count_ones() as u64;
            }
        }
        c + self.far.iter().filter(|&&s| (s as u64) < n).count() as u64
    }
}

/// How one arrival was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Delivered,
    Duplicated,
    Echoed,
    CrossRoom,
}

/// One receiver's tally of this run's frames.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// This receiver: its sender index and its room's id.
    me: u32,
    room: u64,
    /// Room-mates' seqs delivered, by sender.
    seen: HashMap<u32, SeqSet>,
    pub delivered: u64,
    pub duplicated: u64,
    pub echoed: u64,
    pub cross_room: u64,
}

impl Received {
    pub fn new(me: u32, room: u64) -> Received {
        Received {
            me,
            room,
            ..Received::default()
        }
    }

    /// Sort one arrival. The room is checked first: a frame from another room is wrong wherever it
    /// came from.
    pub fn note(&mut self, s: &Stamp) -> Arrival {
        if s.room != self.room {
            self.cross_room += 1;
            Arrival::CrossRoom
        } else if s.sender == self.me {
            self.echoed += 1;
            Arrival::Echoed
        } else if self.seen.entry(s.sender).or_default().insert(s.seq) {
            self.delivered += 1;
            Arrival::Delivered
        } else {
            self.duplicated += 1;
            Arrival::Duplicated
        }
    }

    /// How many of `sender`'s first `sent` frames arrived here.
    fn delivered_of(&self, sender: u32, sent: u64) -> u64 {
        self.seen.get(&sender).map_or(0, |s| s.count_below(sent))
    }
}

/// One user, as the run's delivery accounting sees it.
pub struct Member<'a> {
    pub room: u64,
    /// Frames this user sent (seqs 0..sent).
    pub sent: u64,
    /// Connected for the whole send window: every room-mate's frame is owed to it. Members that joined
    /// late or left early are not: what they got counts as delivered, what they missed is not lost.
    pub whole_window: bool,
    pub received: &'a Received,
}

/// The run's counts by kind (collab; editing has no send window, so nothing is owed there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deliveries {
    /// Deliveries owed: for each frame sent, every other member of its room that was connected for the
    /// whole send window. None when the scenario has no such window (editing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// First arrivals of a room-mate's frame, at any member.
    pub delivered: u64,
    /// Of `delivered`, those at members not connected for the whole window (not owed, not an error;
    /// 0 when nothing is owed).
    pub delivered_to_partial_members: u64,
    /// Owed deliveries that never arrived (counted per sender and seq).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Second and later arrivals of the same (sender, seq) at the same receiver.
    pub duplicated: u64,
    /// A sender's own frames relayed back to it.
    pub echoed: u64,
    /// Frames that arrived in a room other than their sender's.
    pub cross_room: u64,
}

impl Deliveries {
    /// Two slices' counts as one run's (rooms never span slices, so nothing is owed across them).
    pub fn add(&mut self, o: &Deliveries) {
        let opt = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.expected = opt(self.expected, o.expected);
        self.lost = opt(self.lost, o.lost);
        self.delivered += o.delivered;
        self.delivered_to_partial_members += o.delivered_to_partial_members;
        self.duplicated += o.duplicated;
        self.echoed += o.echoed;
        self.cross_room += o.cross_room;
    }

    /// Lost, duplicated, echoed or cross-room frames: each fails the run.
    pub fn faulty(&self) -> bool {
        self.lost.unwrap_or(0) + self.duplicated + self.echoed + self.cross_room > 0
    }
}

/// Count the run. `owed` says whether deliveries are owed at all (collab). Returns the counts and,
/// per member, its lost deliveries (0 for members owed nothing).
pub fn count(members: &[Member], owed: bool) -> (Deliveries, Vec<u64>) {
    let mut by_room: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, m) in members.iter().enumerate() {
        by_room.entry(m.room).or_default().push(i);
    }
    let mut d = Deliveries::default();
    let (mut expected, mut lost) = (0u64, 0u64);
    let mut lost_per = vec![0u64; members.len()];
    for (r, m) in members.iter().enumerate() {
        let rx = m.received;
        d.delivered += rx.delivered;
        d.duplicated += rx.duplicated;
        d.echoed += rx.echoed;
        d.cross_room += rx.cross_room;
        if !owed {
            continue;
        }
        if !m.whole_window {
            d.delivered_to_partial_members += rx.delivered;
            continue;
        }
        for &s in &by_room[&m.room] {
            if s == r {
                continue;
            }
            let sent = members[s].sent;
            let missing = sent - rx.delivered_of(s as u32, sent);
            expected += sent;
            lost_per[r] += missing;
        }
        lost += lost_per[r];
    }
    if owed {
        d.expected = Some(expected);
        d.lost = Some(lost);
    }
    (d, lost_per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(room: u64, sender: u32, seq: u32) -> Stamp {
        Stamp {
            room,
            sender,
            seq,
            sent_us: 0,
        }
    }

    #[test]
    fn arrivals_by_kind() {
        let mut rx = Received::new(1, 7);
        assert_eq!(rx.note(&st(7, 0, 0)), Arrival::Delivered);
        assert_eq!(rx.note(&st(7, 0, 1)), Arrival::Delivered);
        assert_eq!(rx.note(&st(7, 2, 0)), Arrival::Delivered);
        assert_eq!(rx.note(&st(7, 0, 1)), Arrival::Duplicated);
        assert_eq!(rx.note(&st(7, 1, 0)), Arrival::Echoed);
        // Another room's frame, even one claiming to be ours, is cross-room.
        assert_eq!(rx.note(&st(8, 1, 0)), Arrival::CrossRoom);
        assert_eq!(rx.note(&st(8, 0, 0)), Arrival::CrossRoom);
        assert_eq!(
            (rx.delivered, rx.duplicated, rx.echoed, rx.cross_room),
            (3, 1, 1, 2)
        );
    }

    #[test]
    fn seq_set_counts_and_survives_a_huge_seq() {
        let mut s = SeqSet::default();
        for q in [0, 1, 63, 64, 65, 200] {
            assert!(s.insert(q));
        }
        assert!(!s.insert(64));
        assert!(s.insert(u32::MAX));
        assert!(s.bits.len() < 10, "no bitmap for a far seq");
        assert_eq!(s.count_below(0), 0);
        assert_eq!(s.count_below(1), 1);
        assert_eq!(s.count_below(64), 3);
        assert_eq!(s.count_below(65), 4);
        assert_eq!(s.count_below(201), 6);
        assert_eq!(s.count_below(u64::MAX), 7);
    }

    /// Room 1: users 0, 1, 2 (2 left early); room 2: user 3 alone. Everyone sent 3 frames.
    #[test]
    fn lost_counts_only_what_was_owed() {
        let mut rx: Vec<Received> = (0..4u32)
            .map(|i| Received::new(i, if i < 3 { 1 } else { 2 }))
            .collect();
        for seq in 0..3 {
            rx[1].note(&st(1, 0, seq));
            rx[1].note(&st(1, 2, seq));
            rx[2].note(&st(1, 0, seq));
        }
        // User 0 got user 1's frames 0 and 2, and user 2's frame 0 only.
        rx[0].note(&st(1, 1, 0));
        rx[0].note(&st(1, 1, 2));
        rx[0].note(&st(1, 2, 0));
        let whole = [true, true, false, true];
        let members: Vec<Member> = rx
            .iter()
            .enumerate()
            .map(|(i, r)| Member {
                room: if i < 3 { 1 } else { 2 },
                sent: 3,
                whole_window: whole[i],
                received: r,
            })
            .collect();
        let (d, lost_per) = count(&members, true);
        // Owed: to 0 and 1, 3 frames from each of two room-mates; nothing to 2 (partial) or 3 (alone).
        assert_eq!(d.expected, Some(12));
        assert_eq!(lost_per, vec![3, 0, 0, 0]);
        assert_eq!(d.lost, Some(3));
        assert_eq!(d.delivered, 3 + 6 + 3);
        assert_eq!(d.delivered_to_partial_members, 3);
        assert!(d.faulty());
        // Nothing is owed without a send window (editing).
        let (e, lost_per) = count(&members, false);
        assert_eq!((e.expected, e.lost), (None, None));
        assert_eq!((e.delivered, e.delivered_to_partial_members), (12, 0));
        assert_eq!(lost_per, vec![0; 4]);
        assert!(!e.faulty());
    }

    #[test]
    fn a_healthy_room_is_not_faulty() {
        let mut a = Received::new(0, 5);
        let mut b = Received::new(1, 5);
        a.note(&st(5, 1, 0));
        b.note(&st(5, 0, 0));
        b.note(&st(5, 0, 1));
        let member = |sent, received| Member {
            room: 5,
            sent,
            whole_window: true,
            received,
        };
        let (d, _) = count(&[member(2, &a), member(1, &b)], true);
        assert_eq!((d.expected, d.delivered, d.lost), (Some(3), 3, Some(0)));
        assert!(!d.faulty());
        let mut echo = b.clone();
        echo.note(&st(5, 1, 0));
        assert!(count(&[member(2, &a), member(1, &echo)], true).0.faulty());
    }
}
