//! The memory the router's `GET /alloc?mib=N` holds: N more MiB, resident, until
//! the process ends.
//!
//! What a memory limit is tested with: each call allocates N MiB in 1 MiB blocks, writes one
//! byte in every 4 KiB page of them (a fresh allocation is mapped lazily, so without the writes
//! the pages would not count against a cgroup limit), keeps them, and answers
//! `{status, allocated_mib, held_mib, max_alloc_mib, revision, replica}`. Under a container
//! memory limit the kernel's OOM killer ends the process once the held total passes it (exit
//! code 137); without one the memory is simply held. `N` is a whole number `0..=MAX_ALLOC_MIB`
//! (0 reports the total without allocating), and no call takes the total held past
//! `MAX_ALLOC_MIB`: anything else is a 400, before anything is allocated.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::{lock, query_param};

/// One block of held memory.
const BLOCK: usize = 1 << 20;
/// The page size whose every page is written (the smallest Linux page).
const PAGE: usize = 4096;

/// The memory `/alloc` holds.
#[derive(Default)]
pub struct Held {
    blocks: std::sync::Mutex<Vec<Box<[u8]>>>,
    /// MiB held or being allocated: what the `MAX_ALLOC_MIB` cap is checked against.
    reserved: AtomicU64,
}

impl Held {
    /// MiB held now.
    pub fn mib(&self) -> u64 {
        lock(&self.blocks).len() as u64
    }

    /// Reserves `n` MiB, or says why not (the total would pass `max`).
    pub fn reserve(&self, n: u64, max: u64) -> Result<(), AllocError> {
        self.reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                (held + n <= max).then_some(held + n)
            })
            .map(|_| ())
            .map_err(|held| AllocError::OverTotal {
                held,
                asked: n,
                max,
            })
    }
}

impl Held {
    /// Allocates the `n` MiB reserved with [`Held::reserve`], resident, and keeps them (on the
    /// blocking pool: a few GiB take a while); gives the reservation back if that fails.
    pub async fn hold(&self, n: u64) -> Result<(), tokio::task::JoinError> {
        match tokio::task::spawn_blocking(move || resident_blocks(n)).await {
            Ok(fresh) => {
                lock(&self.blocks).extend(fresh);
                Ok(())
            }
            Err(e) => {
                self.reserved.fetch_sub(n, Ordering::SeqCst);
                Err(e)
            }
        }
    }
}

/// Why `/alloc` refuses a request; the message of its 400.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllocError {
    #[error("query parameter mib is required, e.g. ?mib=64")]
    Missing,
    #[error("mib must be a whole number between 0 and {max} (MAX_ALLOC_MIB), got {raw:?}")]
    OutOfRange { raw: String, max: u64 },
    #[error(
        "holding {held} MiB, {asked} more would pass MAX_ALLOC_MIB ({max} MiB in all): nothing allocated"
    )]
    OverTotal { held: u64, asked: u64, max: u64 },
}

/// Parses `mib`: a whole number `0..=max`.
pub fn parse_mib(query: Option<&str>, max: u64) -> Result<u64, AllocError> {
    let raw = query_param(query, "mib").ok_or(AllocError::Missing)?;
    match raw.trim().parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(AllocError::OutOfRange { raw, max }),
    }
}

/// `n` MiB in 1 MiB blocks, every page written so that it is resident.
fn resident_blocks(n: u64) -> Vec<Box<[u8]>> {
    (0..n)
        .map(|_| {
            let mut b = vec![0u8; BLOCK].into_boxed_slice();
            for i in (0..BLOCK).step_by(PAGE) {
                b[i] = 1;
            }
            std::hint::black_box(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mib_is_a_whole_number_up_to_the_cap() {
        assert_eq!(parse_mib(Some("mib=0"), 8), Ok(0));
        assert_eq!(parse_mib(Some("mib=8"), 8), Ok(8));
        assert_eq!(parse_mib(Some("mib=%208"), 8), Ok(8));
        for bad in ["mib=9", "mib=-1", "mib=1.5", "mib=", "mib=x", "mib=1e3"] {
            assert!(
                matches!(parse_mib(Some(bad), 8), Err(AllocError::OutOfRange { .. })),
                "{bad}"
            );
        }
        assert_eq!(parse_mib(None, 8), Err(AllocError::Missing));
        assert_eq!(parse_mib(Some("x=1"), 8), Err(AllocError::Missing));
    }

    #[test]
    fn every_page_of_a_block_is_written() {
        let b = resident_blocks(2);
        assert_eq!(b.len(), 2);
        for block in &b {
            assert_eq!(block.len(), BLOCK);
            assert!((0..BLOCK).step_by(PAGE).all(|i| block[i] == 1));
        }
    }
}
