//! loadgen's `client` lines (virtual clients, `--clients`) folded into counts whose size is
//! bounded by the clients and the windows, never by the lines: a client that is not pinned
//! (no affinity) moves on almost every request, and its lines must not grow the accumulator
//! with the request count. Read by the `clients_moved` check and the timeline's clients row.

use std::collections::{BTreeMap, BTreeSet};

use logline::line::ClientChange;

/// The moves kept as lines per run and scenario, for a check to list.
pub const LISTED_PER_RUN: usize = 50;

/// A run and scenario: (`run_id`, `scenario`).
pub type RunKey = (String, String);

/// The folded `client` lines of every run.
#[derive(Debug, Default)]
pub struct ClientMoves {
    /// Per run and scenario, every client that has a line, with its moves.
    pub runs: BTreeMap<RunKey, BTreeMap<u32, ClientTally>>,
    /// Per run, scenario and rule window (its start, epoch ms), the moves in it.
    pub windows: BTreeMap<(RunKey, i64), WindowMoves>,
    /// The first [`LISTED_PER_RUN`] moves of each run and scenario, in time order once
    /// [`ClientMoves::finish`] has run.
    pub listed: BTreeMap<RunKey, Vec<ClientChange>>,
}

/// One client's moves in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientTally {
    pub moves: u64,
    /// Moves whose response set a cookie (the affinity renewed).
    pub with_cookie: u64,
}

/// The moves of one window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowMoves {
    /// The earliest move's time (epoch ms).
    pub first_ms: i64,
    /// The clients that moved.
    pub clients: BTreeSet<u32>,
    pub with_cookie: u64,
    /// (from replica, to replica) → moves.
    pub paths: BTreeMap<(String, String), u64>,
}

impl ClientMoves {
    /// Folds one line, binned into windows of `window_ms`.
    pub fn add(&mut self, c: ClientChange, window_ms: i64) {
        let key = (
            c.run_id.clone().unwrap_or_else(|| "unknown".to_owned()),
            c.scenario.clone(),
        );
        let tally = self
            .runs
            .entry(key.clone())
            .or_default()
            .entry(c.client)
            .or_default();
        if !c.moved() {
            return;
        }
        let cookie = !c.set_cookie.is_empty();
        tally.moves += 1;
        tally.with_cookie += u64::from(cookie);
        let t = c.ts.epoch_ms();
        let w = self
            .windows
            .entry((key.clone(), t - t.rem_euclid(window_ms.max(1))))
            .or_insert_with(|| WindowMoves {
                first_ms: t,
                ..WindowMoves::default()
            });
        w.first_ms = w.first_ms.min(t);
        w.clients.insert(c.client);
        w.with_cookie += u64::from(cookie);
        let path = (
            c.previous_replica.clone().unwrap_or_default(),
            c.replica.clone().unwrap_or_default(),
        );
        *w.paths.entry(path).or_insert(0) += 1;
        let listed = self.listed.entry(key).or_default();
        listed.push(c);
        // Lines may come out of order (two readers, several files): keep the earliest.
        if listed.len() > 2 * LISTED_PER_RUN {
            keep_earliest(listed);
        }
    }

    /// Folds another reader's moves into these.
    pub fn merge(&mut self, o: ClientMoves) {
        for (k, clients) in o.runs {
            let mine = self.runs.entry(k).or_default();
            for (c, t) in clients {
                let m = mine.entry(c).or_default();
                m.moves += t.moves;
                m.with_cookie += t.with_cookie;
            }
        }
        for (k, w) in o.windows {
            match self.windows.get_mut(&k) {
                None => {
                    self.windows.insert(k, w);
                }
                Some(m) => {
                    m.first_ms = m.first_ms.min(w.first_ms);
                    m.clients.extend(w.clients);
                    m.with_cookie += w.with_cookie;
                    for (p, n) in w.paths {
                        *m.paths.entry(p).or_insert(0) += n;
                    }
                }
            }
        }
        for (k, l) in o.listed {
            self.listed.entry(k).or_default().extend(l);
        }
    }

    /// Sorts and trims the listed moves (after all merges).
    pub fn finish(&mut self) {
        for l in self.listed.values_mut() {
            keep_earliest(l);
        }
    }
}

fn keep_earliest(l: &mut Vec<ClientChange>) {
    l.sort_by_key(|c| (c.ts, c.client));
    l.truncate(LISTED_PER_RUN);
}

#[cfg(test)]
mod tests {
    use logline::Timestamp;

    use super::*;

    fn line(ms: i64, client: u32, prev: Option<&str>, to: &str) -> ClientChange {
        ClientChange {
            ts: Timestamp::from_epoch_ms(ms),
            run_id: Some("r".into()),
            perturbation_id: None,
            scenario: "main".into(),
            client,
            code: Some(200),
            replica: Some(to.into()),
            revision: None,
            previous_replica: prev.map(str::to_owned),
            set_cookie: vec![format!("aff={to}")],
        }
    }

    #[test]
    fn unpinned_clients_fold_into_bounded_counts() {
        // One client moving on every one of 10,000 responses (no affinity): the fold holds one
        // client, the windows they fall in and 50 listed lines.
        let mut m = ClientMoves::default();
        m.add(line(0, 0, None, "a"), 10_000);
        for i in 1..10_000 {
            let (from, to) = if i % 2 == 0 { ("b", "a") } else { ("a", "b") };
            m.add(line(i * 10, 0, Some(from), to), 10_000);
        }
        m.finish();
        let key = ("r".to_owned(), "main".to_owned());
        assert_eq!(m.runs[&key].len(), 1);
        assert_eq!(m.runs[&key][&0].moves, 9_999);
        assert_eq!(m.windows.len(), 10);
        assert_eq!(m.listed[&key].len(), LISTED_PER_RUN);
        assert_eq!(m.listed[&key][0].ts.epoch_ms(), 10);
    }

    #[test]
    fn merging_two_readers_adds_counts_and_keeps_the_earliest_listed() {
        let key = ("r".to_owned(), "main".to_owned());
        let mut a = ClientMoves::default();
        let mut b = ClientMoves::default();
        a.add(line(5_000, 1, Some("x"), "y"), 10_000);
        b.add(line(1_000, 2, Some("x"), "z"), 10_000);
        b.add(line(2_000, 1, None, "x"), 10_000);
        a.merge(b);
        a.finish();
        assert_eq!(a.runs[&key].len(), 2);
        let w = &a.windows[&(key.clone(), 0)];
        assert_eq!(w.first_ms, 1_000);
        assert_eq!(w.clients.len(), 2);
        assert_eq!(w.paths[&("x".to_owned(), "y".to_owned())], 1);
        assert_eq!(a.listed[&key][0].client, 2);
    }
}
