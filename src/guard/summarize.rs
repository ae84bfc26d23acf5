//! The summary step: reduce the cleaned tool output by structure, pack the facts into a small
//! token budget, optionally let the model narrate (Status, Decisions, Open questions, Next
//! relevant action) under a deadline, ground what it wrote, and compose the sections.
//!
//! Facts never depend on the model: Key facts, Evidence and Errors come from the deterministic
//! reduction ([`crate::guard::reduce`]); the model's sentences survive only if every path,
//! number, URL and quoted string in them occurs in the input ([`crate::guard::ground`]), and its
//! Status is used only when it agrees with the failure/success the reduction found.

use crate::backend::{
    NarrateRequest, Narration, Narrator, OutputConstraint, StopReason, TokenCounter,
};
use crate::guard::ground::Grounder;
use crate::guard::prompt;
use crate::guard::reduce::{self, rank::Query, Ctx, Item, Reduction, Section, MUST};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Most tokens of the whole returned result: the sections and what the pipeline adds around
/// them (a header line, the saved file's pointer). Issue 17's target is <= 1,200 tokens; this
/// stays 20 below it, so a pointer a few tokens longer than counted still fits.
pub const RESULT_TOKEN_CAP: usize = 1_180;
/// Most tokens of the returned sections when what goes around them is not known
/// ([`SummaryInput::frame_tokens`] of 0): [`RESULT_TOKEN_CAP`] less about 100 tokens, the size
/// of a pointer and a header line.
pub const OUTPUT_TOKEN_CAP: usize = 1_080;
/// Inputs above this many tokens get at most [`BIG_INPUT_SHARE_PCT`] percent of them (issue budget).
pub const BIG_INPUT_TOKENS: usize = 24_000;
/// Share of the input's tokens a big input's summary may use, in percent (issue budget).
pub const BIG_INPUT_SHARE_PCT: usize = 5;
/// Tokens kept for the section headers and the "shown/omitted" fact.
const HEADER_RESERVE: usize = 40;
/// The Errors section's heading when its lines are warnings and none is an error
/// (`render::sections`): the section stays, and says no error is among its lines. Not "no
/// error" outright: a question that asks for warnings may leave an output's errors unshown,
/// which the Status still counts.
const WARNINGS_HEADING: &str = "Errors: none shown; the warnings:";
/// Tokens kept for the model's Status (beyond the rule-written one it replaces) and its
/// optional Decisions / Open questions / Next action when it runs.
const NARRATIVE_RESERVE: usize = 60;
/// Relevance of each repeated section's first entry (and, for a ranking, its largest line)
/// when the question asks about each of them ([`reduce::signals::section_firsts`]): level
/// with the best match of the question's words, since each one is an answer.
const EACH_REL: f64 = 1.0;
/// Why a next action re-pointed at the top of the extremes points there.
const RANKED_WHY: &str = "the top of the ranking asked for";
/// Why a next action re-pointed at the best line of the section the question names points
/// there.
const SECTION_WHY: &str = "the best match in the section the question names";
/// Why a next action re-pointed at a metrics page's answering sample points there.
const METRICS_WHY: &str = "the top sample of the metric asked about";
/// Why a next action re-pointed at the most relevant shown excerpt points there.
const RELEVANT_WHY: &str = "the best match shown above";
/// Fewest generated tokens worth asking the model for (a Status sentence).
const MIN_NEW_TOKENS: usize = 32;
/// Fewest input tokens worth showing the model.
const MIN_MODEL_INPUT: usize = 120;
/// Chat-template and header tokens around the user message, beyond the cached system prompt.
const PROMPT_OVERHEAD: usize = 80;

/// What to summarize.
pub struct SummaryInput<'a> {
    /// Cleaned text (ANSI stripped, `\r` resolved); line n of it is line n of the saved file.
    pub text: &'a str,
    /// Tool name (e.g. `Bash`).
    pub tool: &'a str,
    /// Tool arguments as JSON text.
    pub args: Option<&'a str>,
    /// What the caller wanted from the tool call.
    pub intent: Option<&'a str>,
    /// Tokens of `text` (real tokenizer), used for the 5% rule.
    pub input_tokens: usize,
    /// Size of the saved file in bytes (the output as received, before cleaning); the summary
    /// states this size, since the cleaned text can be shorter.
    pub bytes: usize,
    /// Tokens of what the pipeline returns around the sections (a header line, the pointer
    /// to the saved file, a note): the sections get [`RESULT_TOKEN_CAP`] less this. 0 when
    /// unknown: the sections get [`OUTPUT_TOKEN_CAP`].
    pub frame_tokens: usize,
}

/// Limits of one summary.
pub struct SummaryBudget {
    /// Tokens of (reduced) tool text the model may see.
    pub prefill_budget: usize,
    /// Upper bound on tokens the model may generate.
    pub max_new_tokens: usize,
    /// Wall-clock deadline for the whole summary; `None` for no limit.
    pub deadline: Option<Instant>,
}

/// The summary and how it was made.
pub struct Summary {
    /// The sections, ready to return (the pipeline adds the pointer line).
    pub text: String,
    /// The model's raw narration and timings; `None` when the model was not used.
    pub narration: Option<Narration>,
    /// Model sentences (or a Status) dropped because they were not grounded in the input.
    pub ungrounded_dropped: usize,
    /// Wall time of detection + reduction + packing (ms).
    pub reduce_ms: f64,
    /// Detected content kind ([`reduce::Kind::name`]).
    pub content_kind: String,
    /// Why the model was not used (or its text was not), if so.
    pub reason: Option<String>,
}

/// Collects the string values of the JSON arguments (for ranking) and an exit code if present.
fn parse_args(args: Option<&str>) -> (String, Option<i64>) {
    let Some(a) = args else {
        return (String::new(), None);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(a) else {
        return (a.to_string(), None);
    };
    let mut words = String::new();
    let mut code = None;
    fn walk(v: &serde_json::Value, words: &mut String, code: &mut Option<i64>, key: &str) {
        match v {
            serde_json::Value::String(s) => {
                words.push_str(s);
                words.push(' ');
            }
            serde_json::Value::Number(n)
                if matches!(
                    key,
                    "exit_code" | "exitCode" | "returncode" | "exit_status" | "exitcode"
                ) =>
            {
                *code = n.as_i64();
            }
            serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| walk(x, words, code, k)),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, words, code, key)),
            _ => {}
        }
    }
    walk(&v, &mut words, &mut code, "");
    (words, code)
}

/// The token cap of the sections for an input of `input_tokens`, when `frame_tokens` go
/// around them ([`SummaryInput::frame_tokens`]): the whole result stays within
/// [`RESULT_TOKEN_CAP`], and within [`BIG_INPUT_SHARE_PCT`] percent of a big input.
pub fn output_cap(input_tokens: usize, frame_tokens: usize) -> usize {
    let cap = if frame_tokens == 0 {
        OUTPUT_TOKEN_CAP
    } else {
        RESULT_TOKEN_CAP.saturating_sub(frame_tokens)
    };
    if input_tokens > BIG_INPUT_TOKENS {
        cap.min((input_tokens * BIG_INPUT_SHARE_PCT / 100).saturating_sub(frame_tokens))
    } else {
        cap
    }
}

fn core(text: &str) -> &str {
    if text.starts_with("[×") {
        if let Some(p) = text.find("] ") {
            return &text[p + 2..];
        }
    }
    text
}

/// Picks items by priority until `budget` tokens are used; [`MUST`] items are always taken.
/// Duplicate lines (same anchor and text) are taken once.
pub fn pack(items: &[Item], budget: usize, counter: &dyn TokenCounter) -> Vec<Item> {
    let mut order: Vec<&Item> = items.iter().collect();
    order.sort_by(|a, b| b.prio.total_cmp(&a.prio).then(a.order.cmp(&b.order)));
    let mut seen: HashSet<(Option<usize>, String)> = HashSet::new();
    let mut used = 0;
    let mut out = Vec::new();
    for it in order {
        let key = (
            if it.section == Section::KeyFacts {
                None
            } else {
                it.line
            },
            core(&it.text).to_string(),
        );
        if it.line.is_some() && it.section != Section::KeyFacts && seen.contains(&key) {
            continue;
        }
        let cost = counter.count(&it.render()) + 1;
        if it.prio >= MUST || used + cost <= budget {
            used += cost;
            seen.insert(key);
            out.push(it.clone());
        } else if used + 10 > budget {
            break;
        }
    }
    out
}

/// Priority added to a reduction item in proportion to how well it matches the question when
/// a saved output is asked ([`summarize_focused`]): above every error line's (at most ~150),
/// so the lines that answer the question win the budget; facts marked [`MUST`] stay first.
pub const FOCUS_BOOST: f64 = 500.0;

/// Raises the priority of each item by [`FOCUS_BOOST`] times its BM25 score against `query`
/// (normalised to the best item's score), leaving [`MUST`] items as they are.
fn focus_items(items: &mut [Item], query: &Query) {
    let docs: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    let scores = crate::guard::reduce::rank::bm25(query, &docs);
    let best = scores.iter().copied().fold(0.0_f64, f64::max);
    if best <= 0.0 {
        return;
    }
    for (it, s) in items.iter_mut().zip(scores) {
        if it.prio < MUST && s > 0.0 {
            it.prio += FOCUS_BOOST * s / best;
        }
    }
}

/// Summarizes one cleaned tool output. Never fails: without a model, or when the model errs,
/// misses its deadline or writes nothing grounded, the sections are written by rule.
pub fn summarize(
    input: &SummaryInput<'_>,
    budget: &SummaryBudget,
    counter: &dyn TokenCounter,
    narrator: Option<&mut dyn Narrator>,
) -> Summary {
    summarize_focused(input, budget, counter, narrator, false)
}

/// [`summarize`], and with `focus` (a saved output asked a new question: the intent is the
/// question) the reduction's items that match the question outrank the rest
/// ([`FOCUS_BOOST`]), so the answer shows the lines the question is about rather than the
/// output's errors again.
pub fn summarize_focused(
    input: &SummaryInput<'_>,
    budget: &SummaryBudget,
    counter: &dyn TokenCounter,
    narrator: Option<&mut dyn Narrator>,
    focus: bool,
) -> Summary {
    let t0 = Instant::now();
    let (arg_words, exit_code) = parse_args(input.args);
    let query = Query::new(&format!(
        "{} {}",
        reduce::intent::Limit::strip(input.intent.unwrap_or("")),
        arg_words
    ));
    // A JSON document cut off before its end is read up to its last complete value, closed;
    // the quotes and the grounding still check against the input itself.
    // (Valid JSON, the common case, is parsed once, by `detect`.)
    let first = reduce::detect(input.text);
    let cut = (first != reduce::Kind::Json)
        .then(|| reduce::truncated::repair(input.text))
        .flatten();
    let text = cut.as_ref().map_or(input.text, |c| c.text.as_str());
    let kind = if cut.is_some() {
        reduce::detect(text)
    } else {
        first
    };
    let ctx = Ctx {
        query: &query,
        exit_code,
        bytes: input.bytes,
    };
    let mut red: Reduction = reduce::reduce(text, kind, &ctx);
    if let Some(c) = &cut {
        // Said first in the Status and as a Key fact that stays when the model's Status
        // replaces the rule's.
        let what = c.describe();
        red.status = format!("{what}. {}", red.status);
        red.items.push(Item::fact(0, what, MUST));
        red.next_action = c.next_action();
    }
    if focus {
        focus_items(&mut red.items, &query);
    }
    let cap = output_cap(input.input_tokens.max(1), input.frame_tokens);
    let fixed = counter.count(&red.status) + counter.count(&red.next_action) + HEADER_RESERVE;
    let reserve = if narrator.is_some() {
        NARRATIVE_RESERVE.min(budget.max_new_tokens)
    } else {
        0
    };
    let items_budget = cap.saturating_sub(fixed + reserve);
    // Units of the input, every signal on each, and the facts mined from the whole.
    let asks = reduce::intent::Asks::of(input.intent.unwrap_or(""));
    let mut query = query;
    reduce::intent::add_measures(&mut query, input.intent.unwrap_or(""));
    let units = reduce::units::build(text, kind);
    let mut scores = reduce::signals::score(&units, &query, &asks);
    let headers = if kind.has_blocks() {
        reduce::select::Headers::of(text).outside(&units.spans)
    } else {
        reduce::select::Headers::default()
    };
    // The section the question names ("in the yahoo-news trace summary"): its matching lines
    // rank with the best matches of the whole text, its siblings' just below theirs. Its
    // best raised line is where the next action points.
    let mut section_best: Option<(f64, usize)> = None;
    for (i, r) in reduce::signals::named_section(
        &units,
        &headers,
        &query,
        input.intent.unwrap_or(""),
        &scores.rel,
    ) {
        // The section's own lines keep or gain relevance; its siblings' lose some.
        if r > 0.0 && r >= scores.rel[i] && section_best.is_none_or(|b| r > b.0) {
            section_best = Some((r, units.units[i].line));
        }
        scores.rel[i] = r;
    }
    if asks.each {
        // One answer per section: each section's first entry is relevant on its own.
        for i in reduce::signals::section_firsts(&units, &headers, &query, asks.ranked()) {
            scores.pick(i, None, EACH_REL);
        }
    }
    let mined = reduce::signals::facts(&units, &query, &headers);
    let mut cands = reduce::select::from_kind(red.items.clone(), &query);
    // A document read as records (XML) was reduced as plain lines too: the line reducer's
    // word matches (`<name>ge-0/0/1</name>`, one leaf of a record) repeat what the records'
    // relevance shows whole, and would take the kind's share of the budget.
    if units.structured && red.kind == reduce::Kind::Lines {
        cands.retain(|c| {
            !(c.channel == reduce::select::Channel::Kind
                && c.item.section == reduce::Section::Evidence
                && c.item.line.is_some()
                && c.item.prio <= reduce::text::MATCH_PRIO_MAX)
        });
    }
    // A line of a vertical record (`qty = -3` of `sqlite3 -line`) is shown with its record,
    // which the records' signals choose: the line reducer's copy of it, alone, says neither
    // whose field it is nor the rest of the record.
    if units.structured && red.kind == reduce::Kind::Lines && !units.spans.is_empty() {
        let inside = |n: usize| reduce::units::in_spans(&units.spans, n);
        cands.retain(|c| {
            !(c.channel == reduce::select::Channel::Kind
                && c.item.section != reduce::Section::KeyFacts
                && c.item.line.is_some_and(inside))
        });
    }
    cands.extend(reduce::select::candidates(&units, &scores, &mined, &query));
    cands.extend(reduce::select::named_keys(text, &query));
    cands.extend(reduce::select::compounds(text, &query));
    cands.extend(reduce::select::calls(text, &query));
    cands.extend(reduce::select::summary_blocks(text));
    cands.extend(reduce::select::stacks(text, &query));
    // A diff's lines are changes, not what went wrong in this call: a changed line or a commit
    // message that names an error (`+    return Err(…)`, "the daemon refused the request") is
    // evidence of the change, not an error of the output.
    // Any line of it is shown as the diff's reducer shows it: with its file and commit.
    if red.kind == reduce::Kind::Diff {
        let shown: HashMap<usize, &str> = red
            .items
            .iter()
            .filter(|it| it.section == reduce::Section::Evidence)
            .filter_map(|it| Some((it.line?, it.text.as_str())))
            .collect();
        for c in cands.iter_mut() {
            if c.item.section == reduce::Section::Errors {
                c.item.section = reduce::Section::Evidence;
            }
            if c.channel != reduce::select::Channel::Kind
                && c.item.section != reduce::Section::KeyFacts
            {
                if let Some(t) = c.item.line.and_then(|n| shown.get(&n)) {
                    c.item.text = t.to_string();
                }
            }
        }
    }
    // A metrics page's samples the question names, ranked per family: the generic extremes
    // rank every family's samples together (bytes against temperatures) and go.
    let metrics = reduce::select::metrics(text, &query, &asks);
    let metrics_answered = !metrics.is_empty();
    // The samples that answer, best family first and each family's top first.
    let metric_lines: Vec<usize> = metrics.iter().filter_map(|c| c.item.line).collect();
    if metrics_answered {
        cands.retain(|c| c.channel != reduce::select::Channel::Extreme);
    }
    cands.extend(metrics);
    let policy = reduce::select::Policy {
        asked: focus,
        asks,
        specific_kind: kind.is_specific(),
        question: input.intent.is_some_and(|i| !i.trim().is_empty()),
    };
    let mut packed =
        reduce::select::select_with(cands.clone(), items_budget, counter, &policy, &headers);
    // What the rules show when the model's reserve comes back unused (its Status dropped):
    // the model chooses among the rest, so a pick is never one the rules would show anyway.
    let shown_by_rules = if reserve > 0 {
        reduce::select::select_with(
            cands.clone(),
            items_budget + reserve,
            counter,
            &policy,
            &headers,
        )
    } else {
        packed.clone()
    };
    let reduce_ms = t0.elapsed().as_secs_f64() * 1000.0;

    let mut final_cands = cands.clone();
    let mut status = red.status.clone();
    let mut next = red.next_action.clone();
    let mut decisions = String::new();
    let mut open = String::new();
    let mut narration = None;
    let mut reason = None;
    let mut dropped = 0;
    match narrator {
        None => reason = Some("no model available".to_string()),
        Some(n) => match model::plan(n, budget) {
            Err(why) => reason = Some(why),
            Ok(plan) => {
                let pool = model::pool(&cands, &shown_by_rules, plan.input_budget, counter);
                let excerpts: Vec<String> = pool.iter().map(|c| model::excerpt(&c.item)).collect();
                let constraint = OutputConstraint::Ids {
                    ids: (1..=pool.len()).map(|i| i.to_string()).collect(),
                    max: prompt::MAX_PICKS,
                    then_text: true,
                };
                let req = NarrateRequest {
                    system: prompt::SYSTEM_PROMPT.to_string(),
                    user: prompt::user_message(input.tool, input.args, input.intent, &excerpts),
                    max_new_tokens: plan.max_new,
                    deadline: budget.deadline,
                    cancel: Arc::new(AtomicBool::new(false)),
                    constraint: Some(constraint.clone()),
                };
                match n.narrate(&req) {
                    Err(e) => reason = Some(format!("model error: {e:#}")),
                    Ok(nar) => {
                        let truncated = !matches!(nar.stop, Some(StopReason::Eos));
                        let (ids, rest) = constraint.parse_ids(&nar.text);
                        // A reply that skipped the ids line (a remote server without
                        // structured output) starts with its sections.
                        let first = nar.text.lines().next().unwrap_or("");
                        let rest = if HEADER.is_match(first) {
                            nar.text.as_str()
                        } else {
                            rest
                        };
                        // The chosen excerpts are taken first, verbatim.
                        let picked: Vec<reduce::select::Cand> = ids
                            .iter()
                            .filter_map(|i| i.parse::<usize>().ok())
                            .filter_map(|i| pool.get(i.wrapping_sub(1)))
                            .enumerate()
                            .map(|(rank, c)| reduce::select::Cand {
                                item: c.item.clone(),
                                channel: reduce::select::Channel::Model,
                                score: (prompt::MAX_PICKS - rank) as f64,
                                group: None,
                                rel: 1.0,
                            })
                            .collect();
                        // Only picks the reduction did not already show: the model adds what
                        // the signals missed and displaces nothing when it agrees with them.
                        let picked: Vec<reduce::select::Cand> = picked
                            .into_iter()
                            .filter(|c| {
                                !shown_by_rules.iter().any(|p| {
                                    p.line == c.item.line && p.section != Section::KeyFacts
                                })
                            })
                            .collect();
                        final_cands.extend(picked);
                        // Claims are checked against the output itself: not the tool's
                        // arguments or the intent (the command line is not in the saved file),
                        // and not our facts either, whose derived figures are ours.
                        let mut g = Grounder::new(input.text);
                        let ms = parse_model(rest);
                        // Prose sections end on a full sentence; a cut-off one is dropped.
                        let st = g.keep(&ms.status, true);
                        let dec = g.keep(&ms.decisions, true);
                        let op = g.keep(&ms.open, true);
                        let nx = g.keep(&ms.next, truncated);
                        dropped = g.dropped;
                        let st = model::clean_status(&st, &mut dropped);
                        let dec = model::clean_status(&dec, &mut dropped);
                        let op = model::clean_status(&op, &mut dropped);
                        let nx = model::clean_status(&nx, &mut dropped);
                        let asked = format!(
                            "{} {} {}",
                            input.tool,
                            input.args.unwrap_or(""),
                            input.intent.unwrap_or("")
                        );
                        // The call without its question: a word the Status takes from the
                        // question alone ("destroy" for "Will this plan destroy anything?") is
                        // the premise restated, not what the excerpts say.
                        let call = format!("{} {}", input.tool, input.args.unwrap_or(""));
                        let view = excerpts.join("\n");
                        let cited_list: Vec<&str> = ids
                            .iter()
                            .filter_map(|i| i.parse::<usize>().ok())
                            .filter_map(|i| excerpts.get(i.wrapping_sub(1)))
                            .map(String::as_str)
                            .collect();
                        let cited = cited_list.join("\n");
                        let intent = input.intent.unwrap_or("");
                        if status_consistent(&st, red.failed)
                            && has_substance(&st, input.text, &view, &asked)
                            && model::cites(&st, &cited, &call)
                            && model::one_place(&st, &cited_list, input.text, intent)
                        {
                            status = clip_tokens(&st, 80, counter);
                        } else {
                            if !st.is_empty() {
                                dropped += 1;
                            }
                            reason = Some("the model's Status was missing, ungrounded or contradicted the reduction; Status written by rule".to_string());
                        }
                        // Decisions and Open questions meet the Status's citation rule; a
                        // Next action must not contradict the reduction either.
                        let mut cited_only = |t: String| {
                            if t.is_empty()
                                || model::cites(&t, &cited, &call)
                                    && model::one_place(&t, &cited_list, input.text, intent)
                            {
                                t
                            } else {
                                dropped += 1;
                                String::new()
                            }
                        };
                        let dec = cited_only(dec);
                        let op = cited_only(op);
                        let contradicts = match red.failed {
                            Some(true) => SUCCESS_CLAIM.is_match(&nx),
                            Some(false) => FAIL_WORD.is_match(&nx),
                            None => false,
                        };
                        let nx = if !contradicts {
                            nx
                        } else {
                            dropped += 1;
                            String::new()
                        };
                        decisions = clip_tokens(&dec, NARRATIVE_RESERVE / 3, counter);
                        open = clip_tokens(&op, NARRATIVE_RESERVE / 3, counter);
                        if !nx.is_empty() {
                            next = clip_tokens(&nx, NARRATIVE_RESERVE / 3, counter);
                        }
                        narration = Some(nar);
                    }
                }
            }
        },
    }
    // The next action may be re-pointed at a shown excerpt once they are packed; a longer
    // one costs the least important excerpt in the fit below, not room held back for it.
    let n_lines = input.text.lines().count().max(1);
    let pointed = |n: usize, why: &str| {
        format!(
            "Read L{}-L{} of the saved file (around L{n}, {why}).",
            n.saturating_sub(5).max(1),
            (n + 20).min(n_lines)
        )
    };
    // A ranking question whose next action is the text reducer's guess.
    let ranked_guess = policy.asks.ranked() && next.ends_with(BEST_MATCH_ACTION);
    let to_extreme = ranked_guess && !metrics_answered;
    let guessed = !to_extreme
        && [BEST_MATCH_ACTION, LAST_ERROR_ACTION, LAST_LINES_ACTION]
            .iter()
            .any(|a| next.ends_with(a))
        && policy.question;
    let to_relevant = guessed && !(policy.asks.why || policy.asks.outcome);
    // The sections' budget once the model's part is known: what its Status and notes did
    // not use goes back to the excerpts.
    let used = counter.count(&status)
        + counter.count(&next)
        + counter.count(&decisions)
        + counter.count(&open)
        + HEADER_RESERVE;
    let final_budget = cap.saturating_sub(used);
    if final_budget != items_budget || final_cands.len() != cands.len() {
        packed = reduce::select::select_with(
            final_cands.clone(),
            final_budget,
            counter,
            &policy,
            &headers,
        );
    }
    // An excerpt the verbatim check would replace by its raw line (or drop) is left out of a
    // second packing, so the room it held goes to the next candidates rather than to a
    // fragment of a line.
    let check = Verbatim::new(input.text, &[input.bytes, input.text.len()]);
    if let Some(kept) = without_failed(final_cands, &packed, &check) {
        packed = reduce::select::select_with(kept, final_budget, counter, &policy, &headers);
    }
    let mut packed = verbatim_only(packed, input.text, &check);
    if metrics_answered && (to_relevant || ranked_guess) {
        if let Some(n) = first_shown(&metric_lines, &packed) {
            next = pointed(n, METRICS_WHY);
        }
    } else if to_extreme {
        if let Some(n) = top_extreme_shown(&cands, &packed) {
            next = pointed(n, RANKED_WHY);
        }
    } else if let Some(n) = section_best
        .filter(|_| to_relevant)
        .and_then(|b| first_shown(&[b.1], &packed))
    {
        next = pointed(n, SECTION_WHY);
    } else if to_relevant || (guessed && errors_off_question(&cands, &packed)) {
        // A question that is not about what failed, or asks why or whether while the errors
        // shown match none of its words: the shown excerpt that answers it best, not the
        // last error line or the BM25 window of its words.
        if let Some(n) = top_relevant_shown(&cands, &packed) {
            next = pointed(n, RELEVANT_WHY);
        }
    }
    let sections = |packed: &[Item]| {
        let mut all = packed.to_vec();
        all.push(shown_fact(input.text, input.bytes, packed));
        let (facts, evidence, errors, warned) = render::sections(&all, input.text);
        let mut text = format!("Status: {}\nKey facts:\n{facts}\n", status.trim());
        if !evidence.is_empty() {
            text.push_str(&format!("Evidence:\n{evidence}\n"));
        }
        if !errors.is_empty() {
            let heading = if warned { WARNINGS_HEADING } else { "Errors:" };
            text.push_str(&format!("{heading}\n{errors}\n"));
        }
        if !decisions.is_empty() {
            text.push_str(&format!("Decisions: {decisions}\n"));
        }
        if !open.is_empty() {
            text.push_str(&format!("Open questions: {open}\n"));
        }
        text.push_str(&format!("Next relevant action: {}", next.trim()));
        text
    };
    // The items were costed one by one; the sections as written (headers, the shown count,
    // tokens across joins) can come out a little over the cap: the least important excerpt
    // goes until they fit.
    let mut text = sections(&packed);
    if std::env::var_os("TOOLSUM_DEBUG_SELECT").is_some() {
        eprintln!(
            "fit: cap {cap} text {} final_budget {final_budget} used {used}",
            counter.count(&text)
        );
    }
    while counter.count(&text) > cap {
        let Some(i) = packed
            .iter()
            .enumerate()
            .filter(|(_, it)| it.prio < MUST)
            .min_by(|a, b| a.1.prio.total_cmp(&b.1.prio).then(b.0.cmp(&a.0)))
            .map(|(i, _)| i)
        else {
            break;
        };
        packed.remove(i);
        text = sections(&packed);
    }
    Summary {
        text,
        narration,
        ungrounded_dropped: dropped,
        reduce_ms,
        content_kind: red.kind.name().to_string(),
        reason,
    }
}

mod checks;
mod frame;
mod model;
mod render;

use checks::{
    clip_tokens, has_substance, parse_model, status_consistent, FAIL_WORD, HEADER, SUCCESS_CLAIM,
};

#[cfg(test)]
use frame::omitted_bytes;
use frame::{
    errors_off_question, first_shown, shown_fact, top_extreme_shown, top_relevant_shown,
    BEST_MATCH_ACTION, LAST_ERROR_ACTION, LAST_LINES_ACTION,
};

#[cfg(test)]
mod tests;
mod verbatim;
use verbatim::{verbatim_only, without_failed, Verbatim};

#[cfg(test)]
mod verbatim_tests;
