//! The selector: spends the summary's token budget across channels, so no single signal eats
//! the summary.
//!
//! Every candidate [`Item`] comes from one [`Channel`]: the kind's own reducer, the model's
//! choice, or one of the generic signals ([`super::signals`]). Facts that must always be shown
//! ([`MUST`]) are taken first. The rest of the budget is split by [`Channel::share`]; channels
//! take turns, each taking its best remaining candidate that fits its share and is not a near
//! copy of one already taken (same line, or a third unit of one template). A channel out of
//! candidates above its threshold gives its unspent share back to the others; what is left at
//! the end is filled, the model's picks first, then the candidates the channels did not reach.

use std::collections::{HashMap, HashSet};

use super::intent::Asks;
use super::{clip_str, Item, MUST};
use crate::backend::TokenCounter;

mod calls;
mod compound;
mod focus;
mod headers;
mod metrics;
mod named;
pub(crate) mod propose;
mod stacks;
mod summary;

pub use calls::calls;
pub use compound::compounds;
pub use headers::{is_banner, lead, Headers};
pub use metrics::metrics;
pub use named::named_keys;
pub use propose::{candidates, from_kind};
pub use stacks::stacks;
pub use summary::summary_blocks;

/// Where a candidate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// Units the model chose as answering the intent.
    Model,
    /// The kind-specific reducer (failing tests of a JUnit report, a SQL table's definition...).
    Kind,
    /// Error and warning units.
    Errors,
    /// Units relevant to the intent.
    Relevance,
    /// Rare templates and rare values.
    Rare,
    /// Numeric extremes.
    Extreme,
    /// First and last units.
    Position,
    /// Facts mined from the whole input (counts, small objects).
    Facts,
}

impl Channel {
    /// Share of the budget (after [`MUST`] items) the channel may spend, when the model chose
    /// nothing. Chosen on the shared corpus and the dev split (issue 17): the kind reducers
    /// keep the largest share, relevance next, every generic signal a floor of its own.
    pub fn share(self) -> f64 {
        match self {
            Channel::Model => 0.0,
            Channel::Kind => 0.30,
            Channel::Errors => 0.12,
            Channel::Relevance => 0.20,
            Channel::Rare => 0.09,
            Channel::Extreme => 0.07,
            Channel::Position => 0.12,
            Channel::Facts => 0.12,
        }
    }

    /// Share when a saved output is asked a question (`toolsum ask`): what matches the
    /// question first; the errors were shown by the first summary.
    pub fn share_asked(self) -> f64 {
        match self {
            Channel::Relevance => 0.45,
            Channel::Kind => 0.20,
            Channel::Errors => 0.05,
            Channel::Position => 0.03,
            c => c.share(),
        }
    }

    /// Most units of one template a channel takes (the kind reducer and the model know why
    /// they chose theirs).
    fn template_cap(self) -> usize {
        match self {
            Channel::Kind | Channel::Model | Channel::Facts => usize::MAX,
            Channel::Relevance | Channel::Errors | Channel::Rare => 3,
            // Extremes are already the top few per field (signals::TOP_RANKED).
            Channel::Extreme => 5,
            _ => 2,
        }
    }

    const ALL: [Channel; 8] = [
        Channel::Model,
        Channel::Kind,
        Channel::Errors,
        Channel::Relevance,
        Channel::Facts,
        Channel::Rare,
        Channel::Extreme,
        Channel::Position,
    ];
}

/// One candidate: an item, the channel that proposes it, its score in that channel (higher
/// first) and its template, for diversity.
#[derive(Debug, Clone)]
pub struct Cand {
    /// What would be shown.
    pub item: Item,
    /// Who proposes it.
    pub channel: Channel,
    /// Its rank key in the channel (higher is taken first).
    pub score: f64,
    /// Template id (units of one template are near copies), if known.
    pub group: Option<usize>,
    /// Relevance to the intent, 0..=1: a channel whose best candidates answer the intent gets
    /// a larger share.
    pub rel: f64,
}

/// The text of an item without the `[×N to L<n>]` prefix of template examples.
pub(crate) fn core(text: &str) -> &str {
    if text.starts_with("[×") {
        if let Some(p) = text.find("] ") {
            return &text[p + 2..];
        }
    }
    text
}

/// What has been taken, to skip near copies: the same text, or a line already quoted (a fact
/// quoting line n and an evidence line n are one; two parts of one long line are not).
#[derive(Default)]
struct Seen {
    texts: HashSet<String>,
    lines: HashMap<usize, Vec<String>>,
    /// Every text taken (with its line), to find an excerpt whose every part is already
    /// shown.
    all: Vec<(Option<usize>, String)>,
    /// What the kind reducer's core shows of each line (a JSON event's decoded `Output`).
    kind_lines: HashMap<usize, Vec<String>>,
}

/// Lines apart within which a line quoted whole inside an excerpt taken before (an XML
/// element's record holding its `<title>` line) is a copy of it; a fact quoting it (a
/// template's example line) is one wherever it is.
const NEAR_LINES: usize = 64;
/// Longest raw line (bytes) that the kind reducer's rendering of it stands for; a longer
/// one (a one-line document) has more to show than the part rendered.
const KIND_RENDERED_MAX: usize = 600;
/// Shortest text checked for being quoted inside another excerpt.
const MIN_QUOTED: usize = 12;
/// Shortest `"key": value` pair (bytes) that makes two renderings of records anchored a line
/// apart one record ([`Seen::has`]): an id or a name, not `"type": "x"`.
const MIN_SAME_PAIR: usize = 32;

/// True when `a` and `b` are both windows of a long line (cut at one end or both): two such
/// that overlap show one stretch of the line twice. A rendering that shares a prefix with a
/// window (a JSON value outlined under its key) shows other parts of it.
fn windows(a: &str, b: &str) -> bool {
    a.contains(super::CUT_MARK) && b.contains(super::CUT_MARK)
}

impl Seen {
    fn has(&self, it: &Item) -> bool {
        let core = core(&it.text);
        if it.line.is_none() {
            return self.texts.contains(core);
        }
        let line = it.line.unwrap_or(0);
        // Parts of one line cut differently are one line: compare what is left between
        // the cut marks.
        let pieces = |t: &str| -> Vec<String> {
            t.split(super::CUT_MARK)
                .map(|p| p.trim().to_string())
                .filter(|p| p.len() >= 8)
                .collect()
        };
        let mine = pieces(core);
        // A line the kind reducer rendered (a JSON event's decoded output) is not quoted
        // again as the file writes it: the reducer showed the part of it that matters.
        if core.len() <= KIND_RENDERED_MAX
            && self.kind_lines.get(&line).is_some_and(|v| {
                v.iter()
                    .any(|t| t.trim().len() >= MIN_QUOTED && core.contains(t.trim()))
            })
        {
            return true;
        }
        if self.lines.get(&line).is_some_and(|v| {
            v.iter().any(|t| {
                t.contains(core)
                    // An excerpt that holds a short one taken before (a leaf of a one-line
                    // document) still shows more.
                    || core.contains(t.as_str()) && t.len() * 3 >= core.len()
                    || (!mine.is_empty() && mine.iter().all(|p| t.contains(p.as_str())))
                    || (windows(core, t)
                        && mine.iter().any(|p| {
                            // Two windows of one long line that overlap by 40+ bytes.
                            let head = super::clip_str(p, 40);
                            head.len() >= 32 && t.contains(head)
                        }))
                    || {
                        let theirs = pieces(t);
                        !theirs.is_empty()
                            && theirs.iter().all(|p| core.contains(p.as_str()))
                            && t.len() * 3 >= core.len()
                    }
            })
        }) {
            return true;
        }
        // A record's fields shown in part (`"a": 1 … "b": 2`), half of them or more already
        // quoted by a record taken before (the same record, anchored a line apart).
        let parts: Vec<&str> = core
            .split(" … ")
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != super::CUT_MARK)
            .collect();
        let is_shown = |p: &str| self.all.iter().any(|(_, t)| t.contains(p));
        let shown = parts.iter().filter(|p| is_shown(p)).count();
        // A part with a number not shown yet (`"subscribers": 85036`) is another record's
        // with the same common values, not this one again.
        let new_number = parts
            .iter()
            .any(|p| p.chars().any(|c| c.is_ascii_digit()) && !is_shown(p));
        if parts.len() >= 2 && shown * 2 >= parts.len() && !new_number {
            return true;
        }
        // The same record rendered by another channel, anchored at its brace or at its first
        // key a line apart: a long pair of it (its id) and half its pairs already shown there.
        let near: Vec<&str> = self
            .all
            .iter()
            .filter(|(l, _)| l.is_some_and(|l| l != line && l.abs_diff(line) <= 1))
            .map(|(_, t)| t.as_str())
            .collect();
        if !near.is_empty() {
            let pairs: Vec<&str> = core
                .split([',', '…', '{', '}'])
                .map(str::trim)
                .filter(|p| p.starts_with('"') && p.contains("\": "))
                .collect();
            for t in near {
                let shared = pairs.iter().filter(|p| t.contains(**p)).count();
                let id = pairs
                    .iter()
                    .any(|p| p.len() >= MIN_SAME_PAIR && t.contains(*p));
                if pairs.len() >= 2 && id && shared * 2 >= pairs.len() {
                    return true;
                }
            }
        }
        // A line quoted whole inside an excerpt of the lines around it, or inside a fact; an
        // error line whose very text was taken anywhere (a failure listed again in the final
        // report): another error says more than the same one twice.
        let whole = core.trim();
        let error = it.section == super::Section::Errors;
        whole.len() >= MIN_QUOTED
            && self.all.iter().any(|(l, t)| {
                l.is_none_or(|l| l.abs_diff(line) <= NEAR_LINES) && t.contains(whole)
                    || error && t.trim() == whole
            })
    }

    /// [`Seen::add`] for an item of the kind reducer's core.
    fn add_kind(&mut self, it: &Item) {
        if let Some(l) = it.line {
            self.kind_lines
                .entry(l)
                .or_default()
                .push(core(&it.text).to_string());
        }
        self.add(it);
    }

    /// True when a line of the same text (trimmed) is already shown, at any line: a line
    /// written many times (`setting up fixtures` of every round) is worth quoting once.
    fn same_text(&self, it: &Item) -> bool {
        let t = core(&it.text).trim();
        it.line.is_some()
            && self
                .all
                .iter()
                .any(|(l, shown)| l.is_some() && shown.trim() == t)
    }

    fn add(&mut self, it: &Item) {
        let core = core(&it.text).to_string();
        self.all.push((it.line, core.clone()));
        match it.line {
            None => {
                self.texts.insert(core);
            }
            Some(l) => self.lines.entry(l).or_default().push(core),
        }
    }
}

/// How the budget is shared for one summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy {
    /// A saved output asked a new question (`toolsum ask`): [`Channel::share_asked`].
    pub asked: bool,
    /// What the intent asks for: it multiplies the shares of the channels that answer it.
    pub asks: Asks,
    /// The kind reducer knows this format's answers (a test report's failures, a dump's
    /// definitions), not only its errors: its core may take [`KIND_CORE_SHARE_SPECIFIC`].
    pub specific_kind: bool,
    /// The call states a question (a non-empty intent): without one, a generic reducer's
    /// errors are the best guess and go first.
    pub question: bool,
}

impl Policy {
    /// The factor on channel `c`'s share for what the intent asks.
    fn factor(&self, c: Channel) -> f64 {
        let a = &self.asks;
        let lookup = !(a.ranked() || a.anomaly || a.count || a.why);
        match c {
            // The extremes are the answer to a ranking (3.0 -> 5.0: dev 293 -> 298, holdout
            // 145 -> 146, shared 101; 8.0: 300, 147, shared 100).
            Channel::Extreme if a.ranked() => 5.0,
            Channel::Rare if a.anomaly => 2.0,
            Channel::Facts if a.count => 1.8,
            Channel::Errors if a.why => 2.0,
            Channel::Position if a.why => 0.5,
            Channel::Kind if a.why => 1.2,
            // Past a stated threshold: the records that cross it are the answer, up to 8
            // ([`crate::guard::reduce::signals::limit`]); they come first in this channel.
            Channel::Relevance if a.limit.is_some() => 3.0,
            Channel::Relevance if lookup => 1.5,
            Channel::Position if lookup => 1.3,
            _ => 1.0,
        }
    }
}

/// Picks items from `cands` within `budget` tokens (see the module doc). The shares are
/// [`Channel::share`], or [`Channel::share_asked`] when a saved output is asked, times
/// [`Policy`]'s factors. The model's picks ([`Channel::Model`]) come first in the fill of the
/// room the channels leave.
pub fn select(
    cands: Vec<Cand>,
    budget: usize,
    counter: &dyn TokenCounter,
    policy: &Policy,
) -> Vec<Item> {
    select_with(cands, budget, counter, policy, &Headers::default())
}

/// [`select`], and each line taken from inside an indented block brings the block's header
/// line ([`Headers`]) when it is not shown yet and both fit: a stanza's `state = Idle` comes
/// with the `neighbor is 10.0.0.2` that opens it. The header costs its own tokens, from the
/// same channel's share.
pub fn select_with(
    cands: Vec<Cand>,
    budget: usize,
    counter: &dyn TokenCounter,
    policy: &Policy,
    headers: &Headers,
) -> Vec<Item> {
    let asked = policy.asked;
    let mut out: Vec<Item> = Vec::new();
    let mut seen = Seen::default();
    let mut used = 0usize;
    let cost = |it: &Item| counter.count(&it.render()) + 1;
    // Musts first, in their order.
    let (musts, rest): (Vec<Cand>, Vec<Cand>) =
        cands.into_iter().partition(|c| c.item.prio >= MUST);
    for c in musts {
        if !seen.has(&c.item) {
            seen.add(&c.item);
            used += cost(&c.item);
            out.push(c.item);
        }
    }
    // The kind reducer's core (what it knows matters for its kind: failing tests, error
    // examples, totals), in its order, up to a share of the budget.
    let core_share = if policy.specific_kind {
        KIND_CORE_SHARE_SPECIFIC
    } else if policy.asks.ranked() || (policy.question && !policy.asks.why && !policy.asks.outcome)
    {
        // Asked for the largest or slowest, or anything but what went wrong or whether it
        // worked, a generic reducer's errors are not the answer: they wait in their
        // channel's turn with the other channels (ranked only: dev 287 -> 289, holdout
        // 144 -> 145; any such question: dev 290 -> 293, holdout 145; half the share
        // instead of none: 288, 144). With no question they are the best guess and go first.
        0.0
    } else {
        KIND_CORE_SHARE
    };
    let core_room = (budget.saturating_sub(used) as f64 * core_share) as usize;
    let (mut core, rest): (Vec<Cand>, Vec<Cand>) = rest.into_iter().partition(|c| {
        c.channel == Channel::Kind
            && c.item.prio
                >= if policy.specific_kind {
                    KIND_CORE_PRIO_SPECIFIC
                } else {
                    KIND_CORE_PRIO
                }
    });
    core.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.item.order.cmp(&b.item.order))
    });
    let mut core_used = 0;
    let mut rest = rest;
    // The header of an item's block, when it is new.
    let header_of = |it: &Item, seen: &Seen| -> Option<Item> {
        if it.section == super::Section::KeyFacts || headers.is_empty() {
            return None;
        }
        headers.header(it.line?, it).filter(|h| !seen.has(h))
    };
    // A line whose text is already shown at another line, in no block of its own with a
    // header not shown yet: a copy (`setting up fixtures` of every round of a log). The same
    // counters line of another interface's stanza is no copy: its header says whose it is.
    let repeat =
        |it: &Item, seen: &Seen| -> bool { seen.same_text(it) && header_of(it, seen).is_none() };
    for c in core {
        let k = cost(&c.item);
        if seen.has(&c.item) {
            continue;
        }
        if core_used + k <= core_room && used + k <= budget {
            core_used += k;
            used += k;
            seen.add_kind(&c.item);
            if let Some(h) = header_of(&c.item, &seen) {
                let hk = cost(&h);
                if core_used + hk <= core_room && used + hk <= budget {
                    core_used += hk;
                    used += hk;
                    seen.add(&h);
                    out.push(h);
                }
            }
            out.push(c.item);
        } else {
            rest.push(c);
        }
    }
    let mut queues: HashMap<Channel, Vec<Cand>> = HashMap::new();
    for c in rest {
        queues.entry(c.channel).or_default().push(c);
    }
    for (ch, q) in queues.iter_mut() {
        q.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.item.order.cmp(&b.item.order))
        });
        // Asked for a ranking, the extremes keep their order: the top five of the best
        // matching series, not the largest of every series first.
        if *ch == Channel::Extreme && policy.asks.ranked() {
            q.reverse();
            continue;
        }
        // Each template's best unit before any template's second: distinct errors (or
        // answers) first, then more of each.
        let mut rank: HashMap<usize, usize> = HashMap::new();
        let mut ranked: Vec<(usize, Cand)> = q
            .drain(..)
            .map(|c| {
                let r = match c.group {
                    Some(g) => {
                        let e = rank.entry(g).or_default();
                        *e += 1;
                        *e - 1
                    }
                    None => 0,
                };
                (r, c)
            })
            .collect();
        ranked.sort_by_key(|(r, _)| *r);
        q.extend(ranked.into_iter().map(|(_, c)| c));
        q.reverse(); // pop() takes the best
    }
    if std::env::var_os("TOOLSUM_DEBUG_SELECT").is_some() {
        eprintln!("=== select: budget {budget}, used by musts and kind core {used}");
        for (c, q) in &queues {
            for x in q.iter().rev().take(
                std::env::var("TOOLSUM_DEBUG_N")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(6),
            ) {
                eprintln!(
                    "{c:?} {:.2} rel={:.2} L{:?} cost={} {}",
                    x.score,
                    x.rel,
                    x.item.line,
                    cost(&x.item),
                    clip_str(&x.item.text, 100)
                );
            }
        }
    }
    let left = budget.saturating_sub(used);
    let share = |c: Channel| {
        if asked {
            c.share_asked()
        } else {
            c.share()
        }
    };
    // The model's picks wait for the fill below: they add to what the signals chose and
    // displace none of it (a small model's picks are mostly the first excerpts offered).
    let active: Vec<Channel> = Channel::ALL
        .iter()
        .copied()
        .filter(|&c| c != Channel::Model && queues.get(&c).is_some_and(|q| !q.is_empty()))
        .collect();
    // A channel's share grows with how well its best candidates match the intent (up to
    // twice its base share).
    let weight: HashMap<Channel, f64> = active
        .iter()
        .map(|&c| {
            let q = &queues[&c];
            let top: Vec<f64> = q.iter().rev().take(3).map(|x| x.rel).collect();
            let mean = top.iter().sum::<f64>() / top.len().max(1) as f64;
            (
                c,
                share(c) * policy.factor(c) * (0.6 + 1.4 * mean.clamp(0.0, 1.0)),
            )
        })
        .collect();
    let share = |c: Channel| weight.get(&c).copied().unwrap_or(0.0);
    let total_share: f64 = active.iter().map(|&c| share(c)).sum::<f64>().max(1e-9);
    // Quotas over the channels that have candidates, so an empty channel's share is not lost.
    let mut quota: HashMap<Channel, f64> = active
        .iter()
        .map(|&c| (c, left as f64 * share(c) / total_share))
        .collect();
    if std::env::var_os("TOOLSUM_DEBUG_SELECT").is_some() {
        eprintln!("quota {quota:?}");
    }
    let mut spent: HashMap<Channel, f64> = HashMap::new();
    let mut per_group: HashMap<(Channel, usize), usize> = HashMap::new();
    let mut group_total: HashMap<usize, usize> = HashMap::new();
    let mut done: HashSet<Channel> = HashSet::new();
    loop {
        let mut progressed = false;
        for &c in &active {
            if done.contains(&c) {
                continue;
            }
            let q = queues.get_mut(&c).expect("active channels have queues");
            // The channel's next candidate that is new, diverse and fits its quota; a few
            // that do not fit are skipped over for smaller ones.
            let mut tries = 0;
            let mut took = false;
            while let Some(cand) = q.pop() {
                if seen.has(&cand.item) || repeat(&cand.item, &seen) {
                    continue;
                }
                if let Some(g) = cand.group {
                    if per_group.get(&(c, g)).copied().unwrap_or(0) >= c.template_cap()
                        || (!matches!(
                            c,
                            Channel::Kind | Channel::Model | Channel::Rare | Channel::Extreme
                        ) && group_total.get(&g).copied().unwrap_or(0) >= 4)
                    {
                        continue;
                    }
                }
                let k_cost = cost(&cand.item) as f64;
                let room = quota[&c] - spent.get(&c).copied().unwrap_or(0.0);
                // A channel's first unit may borrow from the others: every signal gets its
                // best unit in when the whole budget has room.
                let first = spent.get(&c).copied().unwrap_or(0.0) == 0.0
                    && k_cost <= (budget / FIRST_BORROW_DIVISOR) as f64;
                if (k_cost > room && !first) || used + k_cost as usize > budget {
                    tries += 1;
                    if tries >= 3 {
                        break;
                    }
                    continue;
                }
                *spent.entry(c).or_default() += k_cost;
                used += k_cost as usize;
                if let Some(g) = cand.group {
                    *per_group.entry((c, g)).or_default() += 1;
                    *group_total.entry(g).or_default() += 1;
                }
                if c == Channel::Kind {
                    seen.add_kind(&cand.item);
                } else {
                    seen.add(&cand.item);
                }
                if let Some(h) = header_of(&cand.item, &seen) {
                    let hk = cost(&h);
                    if used + hk <= budget {
                        *spent.entry(c).or_default() += hk as f64;
                        used += hk;
                        seen.add(&h);
                        out.push(h);
                    }
                }
                out.push(cand.item);
                took = true;
                break;
            }
            if took {
                progressed = true;
            } else {
                // Out of candidates or of room: give the unspent share to the channels still
                // taking, in proportion to their shares.
                done.insert(c);
                let unspent = (quota[&c] - spent.get(&c).copied().unwrap_or(0.0)).max(0.0);
                quota.insert(c, spent.get(&c).copied().unwrap_or(0.0));
                let open: Vec<Channel> = active
                    .iter()
                    .copied()
                    .filter(|x| !done.contains(x))
                    .collect();
                let s: f64 = open.iter().map(|&x| share(x)).sum();
                if s > 0.0 {
                    for x in open {
                        *quota.get_mut(&x).expect("quota per channel") += unspent * share(x) / s;
                    }
                }
                progressed = true;
            }
        }
        if !progressed || done.len() == active.len() {
            break;
        }
    }
    // Budget the channels left (each stops at its quota, or three misfits): the candidates
    // they did not reach, channel by channel in order of weight, while they fit, each
    // template up to FILL_TEMPLATE_CAP units in all. Units passed over for their template's
    // cap stay out: diversity holds, and room is not left empty.
    let mut order: Vec<Channel> = active.clone();
    order.sort_by(|a, b| share(*b).total_cmp(&share(*a)));
    order.insert(0, Channel::Model);
    for c in order {
        let rest = queues.remove(&c).unwrap_or_default();
        let mut misses = 0;
        for cand in rest.into_iter().rev() {
            if budget.saturating_sub(used) < 10 || misses >= 3 {
                break;
            }
            if seen.has(&cand.item) || repeat(&cand.item, &seen) {
                continue;
            }
            // The model knows why it chose its picks: no template cap for them, as in the
            // channels' turns ([`Channel::template_cap`]).
            if c != Channel::Model
                && cand
                    .group
                    .is_some_and(|g| group_total.get(&g).copied().unwrap_or(0) >= FILL_TEMPLATE_CAP)
            {
                continue;
            }
            let k = cost(&cand.item);
            if used + k > budget {
                misses += 1;
                continue;
            }
            used += k;
            if let Some(g) = cand.group {
                *group_total.entry(g).or_default() += 1;
            }
            if c == Channel::Kind {
                seen.add_kind(&cand.item);
            } else {
                seen.add(&cand.item);
            }
            out.push(cand.item);
        }
    }
    if std::env::var_os("TOOLSUM_DEBUG_SELECT").is_some() {
        for it in &out {
            eprintln!(
                "taken {:.2} L{:?} {:?} {}",
                it.prio,
                it.line,
                it.section,
                clip_str(&it.text, 80)
            );
        }
    }
    out
}

/// Most units of one template the fill after the channels takes (dev split, model off: 8
/// kept 212 facts, 4 kept 211; holdout 134 either way).
const FILL_TEMPLATE_CAP: usize = 8;

/// Kind items at or above this priority are the kind reducer's core: error examples and
/// failing tests (100-150), totals and exit lines (`MUST / 10`).
const KIND_CORE_PRIO: f64 = 100.0;
/// [`KIND_CORE_PRIO`] for a format-specific reducer, whose definitions and entries (50-99)
/// answer questions as often as its errors.
const KIND_CORE_PRIO_SPECIFIC: f64 = 50.0;
/// Share of the budget (after the musts) the kind core may take before the channels run.
const KIND_CORE_SHARE: f64 = 0.35;
/// [`KIND_CORE_SHARE`] for a format-specific reducer (test reports, SQL dumps, listings,
/// `kubectl describe`, diffs, stack traces); chosen on the shared corpus and the dev split.
const KIND_CORE_SHARE_SPECIFIC: f64 = 0.6;

/// A channel's first unit may exceed its share, up to this fraction (1/N) of the whole budget.
const FIRST_BORROW_DIVISOR: usize = 6;

#[cfg(test)]
mod focus_tests;
#[cfg(test)]
mod propose_tests;
#[cfg(test)]
mod tests;
