//! Transparent huge pages for the weights and the KV cache.
//!
//! Decode reads every weight once per token: SmolLM2-135M's 111 MB are ~27,000 4 KiB pages,
//! each a TLB miss and a page walk per token. On 2 MiB pages they are ~53. The kernel backs a
//! range with huge pages only where it was asked to (`MADV_HUGEPAGE`, when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `madvise`, the common default) and only
//! for whole, aligned 2 MiB pages; `MADV_COLLAPSE` (Linux 6.1+) turns the pages already
//! written into huge pages now instead of when `khugepaged` gets to them.
//!
//! Most of a small model's matrices are under 2 MiB each, but they are allocated one after
//! another at load, so [`advise`] merges the ranges it is given across gaps of less than one
//! huge page and advises the merged spans. The cost: the small gaps inside a span become
//! resident (each under one huge page; the daemon's RSS is measured by `benches/load.rs`).
//!
//! Measured on the 2-core Xeon (THP `madvise`, Linux 6.18; two builds alternating, two runs
//! each): 160 MiB of SmolLM2-135M's weights and KV cache land on huge pages; decode tg128 @2048
//! 85-90 → 104-108 tok/s, Qwen2.5-Coder-0.5B tg128 @0 38-40 → 46-47 tok/s, prefill unchanged.

/// Bytes per huge page (x86-64 and AArch64 with 4 KiB base pages: 2 MiB).
pub const HUGE_PAGE: usize = 2 << 20;

/// `MADV_COLLAPSE` from `linux/mman.h` (value 25; the `libc` crate may not export it).
#[cfg(target_os = "linux")]
const MADV_COLLAPSE: libc::c_int = 25;

/// Merges the address ranges `(start, len)` (bytes) whose gaps are under [`HUGE_PAGE`],
/// sorted by start. Empty ranges are dropped.
pub fn merge(ranges: impl IntoIterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut r: Vec<(usize, usize)> = ranges
        .into_iter()
        .filter(|&(_, len)| len > 0)
        .map(|(s, len)| (s, s + len))
        .collect();
    r.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in r {
        match out.last_mut() {
            Some(last) if s <= last.1 + HUGE_PAGE => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out.into_iter().map(|(s, e)| (s, e - s)).collect()
}

/// The whole huge pages inside `(start, len)`: `(aligned start, len)`, or `None`.
pub fn interior(start: usize, len: usize) -> Option<(usize, usize)> {
    let a = start.next_multiple_of(HUGE_PAGE);
    let b = (start + len) / HUGE_PAGE * HUGE_PAGE;
    (b > a).then_some((a, b - a))
}

/// Huge-page advice over some buffers, withdrawn (`MADV_NOHUGEPAGE`) when dropped: the merged
/// spans include heap between the buffers, which must not stay huge-page-eligible after the
/// buffers are freed (a daemon that reloads a model would otherwise let `khugepaged` turn
/// sparse heap into whole 2 MiB pages). Keep it alive exactly as long as the buffers.
#[derive(Debug, Default)]
pub struct Advised {
    /// The advised spans `(start, len)`, whole huge pages.
    spans: Vec<(usize, usize)>,
}

impl Advised {
    /// Bytes advised (whole huge pages; 0 where the OS has no THP or refused).
    pub fn bytes(&self) -> usize {
        self.spans.iter().map(|s| s.1).sum()
    }
}

impl Drop for Advised {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        for &(a, n) in &self.spans {
            // SAFETY: advice never changes memory contents; an unmapped hole only makes the
            // call return ENOMEM after handling the mapped parts.
            unsafe { libc::madvise(a as *mut libc::c_void, n, libc::MADV_NOHUGEPAGE) };
        }
    }
}

/// Asks the kernel to back the merged `ranges` (see [`merge`]) with huge pages and to collapse
/// what is already written (`MADV_COLLAPSE` runs synchronously: on a host with fragmented
/// memory it can add to load time). Best effort: a kernel without THP, or with it `never`,
/// refuses quietly and nothing changes; on other systems this does nothing.
///
/// Advice never changes memory contents, so any ranges are safe to pass; they should be
/// buffers the caller owns, and the returned [`Advised`] should live as long as they do.
pub fn advise(ranges: impl IntoIterator<Item = (usize, usize)>) -> Advised {
    let spans: Vec<(usize, usize)> = merge(ranges)
        .into_iter()
        .filter_map(|(s, len)| interior(s, len))
        .collect();
    #[cfg(target_os = "linux")]
    {
        let spans = spans
            .into_iter()
            .filter(|&(a, n)| {
                let p = a as *mut libc::c_void;
                // SAFETY: advice never changes memory contents. The span lies between buffers
                // the caller owns; a hole between two mappings inside it (ENOMEM) only means
                // the mapped parts were advised.
                let rc = unsafe { libc::madvise(p, n, libc::MADV_HUGEPAGE) };
                let advised =
                    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOMEM);
                if advised {
                    // SAFETY: as above; a refusal (EINVAL before Linux 6.1, EAGAIN) is harmless.
                    unsafe { libc::madvise(p, n, MADV_COLLAPSE) };
                }
                advised
            })
            .collect();
        Advised { spans }
    }
    #[cfg(not(target_os = "linux"))]
    {
        drop(spans);
        Advised::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_joins_ranges_closer_than_a_huge_page_and_keeps_far_ones_apart() {
        let m = merge([(10_000_000, 100), (0, 10), (20, 30), (3 << 20, 5), (0, 0)]);
        assert_eq!(m, vec![(0, 50), (3 << 20, 5), (10_000_000, 100)]);
        // Overlaps and containment.
        assert_eq!(merge([(0, 100), (50, 10), (90, 20)]), vec![(0, 110)]);
    }

    #[test]
    fn interior_is_the_whole_aligned_pages_only() {
        assert_eq!(interior(1, HUGE_PAGE), None);
        assert_eq!(
            interior(HUGE_PAGE - 1, 2 * HUGE_PAGE + 1),
            Some((HUGE_PAGE, 2 * HUGE_PAGE))
        );
        assert_eq!(interior(0, 3 * HUGE_PAGE - 1), Some((0, 2 * HUGE_PAGE)));
    }

    #[test]
    fn advise_keeps_contents() {
        let v: Vec<u64> = (0..(3 * HUGE_PAGE / 8) as u64).collect();
        let advised = advise([(v.as_ptr() as usize, v.len() * 8)]);
        assert!(advised.bytes() <= v.len() * 8);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
        drop(advised);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
