//! Transparent huge pages for the weights and the KV cache.
//!
//! Decode reads every weight once per token: SmolLM2-135M's 111 MB are ~27,000 4 KiB pages,
//! each a TLB miss and a page walk per token. On 2 MiB pages they are ~53. `MADV_COLLAPSE`
//! (Linux 6.1+) turns written memory into huge pages now, for whole aligned 2 MiB pages, where
//! the range is advised `MADV_HUGEPAGE` (`/sys/kernel/mm/transparent_hugepage/enabled` set to
//! `madvise`, the common default, or `always`).
//!
//! Most of a small model's matrices are under 2 MiB each, but they are allocated one after
//! another at load, so [`collapse`] merges the ranges it is given across gaps of less than one
//! huge page and collapses the merged spans. The cost: the small gaps inside a span become
//! resident at load (each under one huge page; the daemon's RSS is measured by
//! `benches/load.rs`).
//!
//! Measured on the 2-core Xeon (THP `madvise`, Linux 6.18; two builds alternating, two runs
//! each): 160 MiB of SmolLM2-135M's weights and KV cache land on huge pages; decode tg128 @2048
//! 85-90 → 104-108 tok/s, Qwen2.5-Coder-0.5B tg128 @0 38-40 → 46-47 tok/s, prefill unchanged.

/// Environment variable: `0` turns [`collapse`] off (for A/B runs, or a host where
/// compaction at load is unwelcome).
pub const HUGE_PAGES_ENV: &str = "TOOLSUM_HUGE_PAGES";

/// Bytes per huge page (x86-64 and AArch64 with 4 KiB base pages: 2 MiB).
pub const HUGE_PAGE: usize = 2 << 20;

/// `MADV_COLLAPSE` from `linux/mman.h` (value 25; the `libc` crate may not export it).
#[cfg(target_os = "linux")]
const MADV_COLLAPSE: libc::c_int = 25;

/// Whether `/sys/kernel/mm/transparent_hugepage/enabled` selects `never` (the selected value is
/// the bracketed one, e.g. `always [madvise] never`). Unreadable: not disabled.
fn thp_disabled() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| selects_never(&s))
}

/// The parsing half of [`thp_disabled`].
fn selects_never(setting: &str) -> bool {
    setting.contains("[never]")
}

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
    (b > a).then(|| (a, b - a))
}

/// Collapses the merged `ranges` (see [`merge`]) onto huge pages now: `MADV_HUGEPAGE`, then
/// `MADV_COLLAPSE` (synchronous: on a host with fragmented memory it can add to load time),
/// then `MADV_NOHUGEPAGE`, so the huge pages made stay but the heap between the buffers does
/// not remain eligible: a later allocation there faults in 4 KiB pages, not 2 MiB ones (with
/// the advice left on, the daemon's RSS at rest grew 1.07x over 1,100 requests instead of
/// staying flat). Returns the bytes collapsed (whole huge pages).
///
/// Best effort: before Linux 6.1 (no `MADV_COLLAPSE`), with THP set to `never` (which
/// `MADV_COLLAPSE` itself would ignore, so it is checked here: the administrator's choice
/// stands), or on other systems, nothing changes and it returns 0. Only written memory collapses (a never-touched page has
/// nothing to collapse): call it after the buffers are filled. Advice never changes memory
/// contents, so any ranges are safe to pass; they should be buffers the caller owns.
pub fn collapse(ranges: impl IntoIterator<Item = (usize, usize)>) -> usize {
    if std::env::var(HUGE_PAGES_ENV).as_deref() == Ok("0") || thp_disabled() {
        return 0;
    }
    let spans: Vec<(usize, usize)> = merge(ranges)
        .into_iter()
        .filter_map(|(s, len)| interior(s, len))
        .collect();
    let mut bytes = 0;
    #[cfg(target_os = "linux")]
    for (a, n) in spans {
        let p = a as *mut libc::c_void;
        // SAFETY: advice never changes memory contents. The span lies between buffers the
        // caller owns; a hole between two mappings inside it only makes a call return ENOMEM
        // after handling the mapped parts.
        unsafe {
            libc::madvise(p, n, libc::MADV_HUGEPAGE);
            if libc::madvise(p, n, MADV_COLLAPSE) == 0 {
                bytes += n;
            }
            libc::madvise(p, n, libc::MADV_NOHUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    drop(spans);
    bytes
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
    fn the_never_setting_is_recognized() {
        assert!(selects_never("always madvise [never]\n"));
        assert!(!selects_never("always [madvise] never\n"));
        assert!(!selects_never("[always] madvise never\n"));
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
    fn collapse_keeps_contents() {
        let v: Vec<u64> = (0..(3 * HUGE_PAGE / 8) as u64).collect();
        let bytes = collapse([(v.as_ptr() as usize, v.len() * 8)]);
        assert!(bytes <= v.len() * 8);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }
}
