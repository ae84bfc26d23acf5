//! The model's part of a summary: how much it may read and write in the time left, the pool of
//! excerpts it chooses from, and the checks its Status passes before it is shown.

use std::collections::HashSet;
use std::time::Instant;

use super::{SummaryBudget, MIN_MODEL_INPUT, MIN_NEW_TOKENS, PROMPT_OVERHEAD};
use crate::backend::{Narrator, TokenCounter};
use crate::guard::prompt;
use crate::guard::reduce::select::{Cand, Channel};
use crate::guard::reduce::{show_line_max, Item, Section};

/// Most excerpts offered to the model.
pub const POOL: usize = 24;
/// Longest excerpt shown to the model (bytes): enough for a line's point, short enough for
/// two dozen of them in the prefill budget.
const EXCERPT_BYTES: usize = 220;

/// What the model may spend on one summary.
pub struct Plan {
    /// Tokens of excerpts it may read.
    pub input_budget: usize,
    /// Tokens it may write.
    pub max_new: usize,
}

/// Sizes the model's input and output to the time left before the budget's deadline, from the
/// narrator's measured prefill and decode speeds.
///
/// # Errors
/// A reason, when the budget or the time left is too small for the model.
pub fn plan(n: &dyn Narrator, budget: &SummaryBudget) -> Result<Plan, String> {
    let p = n.prefill_tok_per_s().max(1.0);
    let d = n.decode_tok_per_s().max(0.5);
    let mut max_new = budget.max_new_tokens.min(prompt_answer_tokens());
    let mut input_budget = budget.prefill_budget;
    if max_new < MIN_NEW_TOKENS || input_budget < MIN_MODEL_INPUT {
        return Err("budget too small for the model".to_string());
    }
    if let Some(dl) = budget.deadline {
        let left = dl.saturating_duration_since(Instant::now()).as_secs_f64() * 0.9;
        let need = (MIN_MODEL_INPUT + PROMPT_OVERHEAD) as f64 / p + MIN_NEW_TOKENS as f64 / d;
        if left < need {
            return Err(format!(
                "deadline (model_ms or the request's deadline_ms): {:.0} ms left, the model needs at least {:.0} ms",
                left * 1000.0,
                need * 1000.0
            ));
        }
        max_new = max_new.min(((left * 0.4) * d) as usize).max(MIN_NEW_TOKENS);
        let prefill_time = left - max_new as f64 / d;
        let fit = (prefill_time * p) as usize;
        input_budget = input_budget
            .min(fit.saturating_sub(PROMPT_OVERHEAD))
            .max(MIN_MODEL_INPUT);
    }
    Ok(Plan {
        input_budget,
        max_new,
    })
}

/// Tokens an answer needs: a line of up to six numbers and a Status of two sentences.
fn prompt_answer_tokens() -> usize {
    110
}

/// An excerpt as the model sees it: `L<line>: text`, clipped.
pub fn excerpt(it: &Item) -> String {
    let text = show_line_max(&it.text, EXCERPT_BYTES);
    match it.line {
        Some(l) => format!("L{l}: {text}"),
        None => text,
    }
}

/// The excerpts offered to the model: the best candidates of every channel in turn (the
/// kind's reducer, relevance, rarity, extremes, errors, position), anchored units only, no
/// two alike, within `budget` tokens and [`POOL`] excerpts. The runners-up come first: lines
/// the rules do not quote (`shown`: what the deterministic selection packed), where a pick
/// adds something; the lines already shown fill what is left, so a short output's Status
/// still has its excerpts to cite.
pub fn pool(
    cands: &[Cand],
    shown: &[Item],
    budget: usize,
    counter: &dyn TokenCounter,
) -> Vec<Cand> {
    let shown: HashSet<usize> = shown
        .iter()
        .filter(|i| i.section != Section::KeyFacts)
        .filter_map(|i| i.line)
        .collect();
    let mut out: Vec<Cand> = Vec::new();
    let mut seen: HashSet<(Option<usize>, String)> = HashSet::new();
    let mut used = 0;
    for runners_up in [true, false] {
        let anchored = |c: &&Cand| {
            c.item
                .line
                .is_some_and(|l| shown.contains(&l) != runners_up)
        };
        if !take_turns(
            cands, anchored, budget, counter, &mut out, &mut seen, &mut used,
        ) {
            break;
        }
    }
    out
}

/// Channels of [`pool`], in the order they take turns.
const POOL_ORDER: [Channel; 7] = [
    Channel::Relevance,
    Channel::Kind,
    Channel::Rare,
    Channel::Extreme,
    Channel::Errors,
    Channel::Facts,
    Channel::Position,
];

/// One round-robin pass of [`pool`] over the candidates `keep` admits; false once the budget
/// or [`POOL`] is full.
fn take_turns(
    cands: &[Cand],
    keep: impl Fn(&&Cand) -> bool,
    budget: usize,
    counter: &dyn TokenCounter,
    out: &mut Vec<Cand>,
    seen: &mut HashSet<(Option<usize>, String)>,
    used: &mut usize,
) -> bool {
    let mut queues: Vec<Vec<&Cand>> = POOL_ORDER
        .iter()
        .map(|ch| {
            let mut q: Vec<&Cand> = cands
                .iter()
                .filter(|c| c.channel == *ch)
                .filter(&keep)
                .filter(|c| c.item.section != Section::KeyFacts || c.channel == Channel::Facts)
                .collect();
            q.sort_by(|a, b| b.score.total_cmp(&a.score));
            q.reverse();
            q
        })
        .collect();
    loop {
        let mut any = false;
        for q in &mut queues {
            while let Some(c) = q.pop() {
                let key = (c.item.line, c.item.text.clone());
                if !seen.insert(key) {
                    continue;
                }
                let cost = counter.count(&excerpt(&c.item)) + 3;
                if *used + cost > budget || out.len() >= POOL {
                    return false;
                }
                *used += cost;
                out.push(c.clone());
                any = true;
                break;
            }
        }
        if !any {
            return true;
        }
    }
}

/// The Status as shown: the grounded sentences, less any that repeats our prompt's words;
/// each one dropped adds to `dropped`.
pub fn clean_status(st: &str, dropped: &mut usize) -> String {
    let kept: Vec<String> = crate::guard::ground::split_sentences(st)
        .into_iter()
        .filter(|s| {
            let bad = prompt::leaks(s);
            if bad {
                *dropped += 1;
            }
            !bad
        })
        .map(|s| s.trim().to_string())
        .collect();
    kept.join(" ")
}

/// The words of a model's sentence as [`cites`] and [`one_place`] read them: split at
/// whitespace, `, ; ( )` and quotes, a sentence's closing `. : ! ?` dropped.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '`' | '\''))
        .map(|t| t.trim_end_matches(['.', ':', '!', '?']))
}

/// True for a specific token: three characters or more with a digit or `/ . _ : -` in it (a
/// name, a path, a version, an id), which a sentence can only have taken from the output.
fn specific(t: &str) -> bool {
    t.len() >= 3
        && t.chars()
            .any(|c| c.is_ascii_digit() || matches!(c, '/' | '.' | '_' | ':' | '-'))
}

/// Bytes of the output within which a sentence's names must all stand, when no one cited
/// excerpt holds them all ([`one_place`]): a failing test's name and its assertion a few
/// lines below it are one place; two records of a JSON-lines output, each a line of 1-2 KB,
/// are two.
const PLACE_BYTES: usize = 400;

/// Most occurrences of one name looked at in the output by [`one_place`].
const MAX_PLACES: usize = 4_096;

/// True when each sentence of a model's `text` says what one place of the output says: the
/// names it gives (quoted or backticked strings, paths, numbers of three digits or more,
/// tokens with a digit or `/ . _ : -`, and words of four letters or more that the question
/// `intent` writes and a cited excerpt holds) all stand in one of the cited `excerpts`, or
/// within [`PLACE_BYTES`] of each other in the `output` (case ignored), when it gives two
/// or more. "The tokenizers crate was compiled with features `serde_json` and `lib`" joins
/// the crate the question names to names that other crates' lines hold, each grounded alone:
/// dropped (a new user's cargo check, session 39); the Status by rule stands in for it.
pub fn one_place(text: &str, excerpts: &[&str], output: &str, intent: &str) -> bool {
    let lower: Vec<String> = excerpts.iter().map(|e| e.to_lowercase()).collect();
    let mut out_lower: Option<String> = None;
    crate::guard::ground::split_sentences(text)
        .iter()
        .all(|sentence| {
            let mut named: Vec<String> = crate::guard::ground::claims(sentence)
                .into_iter()
                .map(|c| crate::guard::ground::collapse(&c).to_lowercase())
                .filter(|c| !c.is_empty())
                .collect();
            for t in tokens(sentence) {
                let lw = t.to_lowercase();
                let asked = lw.chars().count() >= 4
                    && lw.chars().all(char::is_alphabetic)
                    && !super::checks::GENERIC_WORDS.contains(&lw.as_str())
                    && super::checks::contains_word_ci(intent, &lw)
                    && lower.iter().any(|e| e.contains(lw.as_str()));
                if (specific(t) || asked) && !named.contains(&lw) {
                    named.push(lw);
                }
            }
            if named.len() < 2
                || lower
                    .iter()
                    .any(|e| named.iter().all(|n| e.contains(n.as_str())))
            {
                return true;
            }
            let hay = out_lower
                .get_or_insert_with(|| crate::guard::ground::collapse(output).to_lowercase());
            near_each_other(hay, &named)
        })
}

/// True when every one of `names` occurs in `hay` within [`PLACE_BYTES`] of one occurrence
/// of the first of them that is rarest.
fn near_each_other(hay: &str, names: &[String]) -> bool {
    let places: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            hay.match_indices(n.as_str())
                .map(|(p, _)| p)
                .take(MAX_PLACES)
                .collect()
        })
        .collect();
    let Some(rarest) = (0..places.len()).min_by_key(|&k| places[k].len()) else {
        return true;
    };
    places[rarest].iter().any(|&p| {
        let (lo, hi) = (p.saturating_sub(PLACE_BYTES), p + PLACE_BYTES);
        places.iter().all(|v| {
            let k = v.partition_point(|&x| x < lo);
            v.get(k).is_some_and(|&x| x <= hi)
        })
    })
}

/// True when a Status says what the excerpts it cites (`cited`, the chosen excerpts' text) say:
/// every word of four or more letters in it is one of theirs, one of the call's (`call`: tool
/// and arguments, not the question, whose words a Status may only restate as a premise: "the
/// plan will destroy `lambda_function_74`" of a resource the excerpts say is created) or a
/// generic word ([`super::checks::GENERIC_WORDS`]), and it quotes
/// at least one specific token of theirs (a name with a digit or `/ . _ : -` in it, or three
/// words in a row). "The user did not get into the box" answers the question in its own
/// words and cites nothing: it is dropped (issue 17: when in doubt, drop it).
pub fn cites(status: &str, cited: &str, call: &str) -> bool {
    if cited.trim().is_empty() {
        return false;
    }
    let words: Vec<&str> = status
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4 && w.chars().all(char::is_alphabetic))
        .collect();
    let all_known = words.iter().all(|w| {
        let lw = w.to_lowercase();
        super::checks::GENERIC_WORDS.contains(&lw.as_str())
            || super::checks::contains_word_ci(call, &lw)
            || super::checks::contains_word_ci(cited, &lw)
    });
    if !all_known {
        return false;
    }
    let cited_l = cited.to_lowercase();
    let quotes = tokens(status)
        .filter(|t| specific(t))
        .any(|t| cited_l.contains(&t.to_lowercase()));
    if quotes {
        return true;
    }
    let ws: Vec<String> = status
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    ws.windows(3).any(|w| {
        let phrase = w.join(" ");
        phrase.len() >= 12
            && cited_l
                .split(|c: char| !c.is_alphanumeric())
                .filter(|x| !x.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&phrase)
    })
}

#[cfg(test)]
mod tests {
    use super::{cites, one_place, pool};
    use crate::backend::TokenCounter;
    use crate::guard::reduce::select::{Cand, Channel};
    use crate::guard::reduce::{Item, Section};

    struct Words;
    impl TokenCounter for Words {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    fn cand(line: usize, channel: Channel, score: f64) -> Cand {
        Cand {
            item: Item::line(Section::Evidence, line, format!("line {line} text"), 1.0),
            channel,
            score,
            group: None,
            rel: 0.0,
        }
    }

    #[test]
    fn the_pool_offers_the_runners_up_before_what_is_shown() {
        let cands = vec![
            cand(1, Channel::Relevance, 9.0),
            cand(2, Channel::Relevance, 8.0),
            cand(3, Channel::Relevance, 7.0),
            cand(4, Channel::Rare, 5.0),
            cand(5, Channel::Position, 1.0),
        ];
        let shown = vec![cands[0].item.clone(), cands[3].item.clone()];
        let lines = |p: Vec<Cand>| p.iter().map(|c| c.item.line.unwrap()).collect::<Vec<_>>();
        // Channels take turns among the lines not shown, then the shown ones follow.
        assert_eq!(lines(pool(&cands, &shown, 1_000, &Words)), [2, 5, 3, 1, 4]);
        // A budget of three excerpts (4 words + 3 each) holds runners-up only.
        assert_eq!(lines(pool(&cands, &shown, 21, &Words)), [2, 5, 3]);
    }

    #[test]
    fn a_sentence_names_what_one_excerpt_says() {
        let excerpts = [
            r#"L237: {"reason":"compiler-artifact","package_id":"tokenizers@0.23.2","target":{"kind":["lib"]},"features":["fancy-regex"]}"#,
            r#"L12: {"reason":"compiler-artifact","package_id":"serde_json@1.0.1","target":{"kind":["lib"]},"features":["std"]}"#,
        ];
        let intent = "Which features was the tokenizers crate built with?";
        let output = excerpts.join(&format!("\n{}\n", "x".repeat(600)));
        assert!(!one_place(
            "The tokenizers crate was compiled with features `serde_json` and `lib`.",
            &excerpts,
            &output,
            intent
        ));
        assert!(one_place(
            "The tokenizers crate was built with the `fancy-regex` feature.",
            &excerpts,
            &output,
            intent
        ));
        // One name alone is checked by the grounding, not here.
        assert!(one_place(
            "It built `serde_json`.",
            &excerpts,
            &output,
            intent
        ));
        // A test's name and its assertion three lines below: one place of the output.
        let output = "tests/a.py::test_x FAILED\nlog line\nlog line\nE   AssertionError: expected 200 got 409\n";
        let excerpts = [
            "L1: tests/a.py::test_x FAILED",
            "L4: E   AssertionError: expected 200 got 409",
        ];
        assert!(one_place(
            "The run failed: test_x: AssertionError: expected 200 got 409.",
            &excerpts,
            output,
            "run tests"
        ));
    }

    #[test]
    fn a_status_must_quote_what_it_cites() {
        let cited = "L862: sshd[4803]: Accepted publickey for deploy from 198.51.100.23 port 50522";
        let asked = "Bash journalctl";
        assert!(
            cites(
                "Yes: deploy logged in with a publickey from 198.51.100.23.",
                cited,
                asked
            ) || cites(
                "Accepted publickey for deploy from 198.51.100.23.",
                cited,
                asked
            )
        );
        assert!(cites(
            "Accepted publickey for deploy from 198.51.100.23.",
            cited,
            asked
        ));
        // Its own words, nothing of the excerpts': dropped.
        assert!(!cites(
            "The user did not get into the box over SSH.",
            cited,
            asked
        ));
        // A word the excerpts do not have.
        assert!(!cites(
            "Login for deploy from 198.51.100.23 was refused.",
            cited,
            asked
        ));
        // Nothing cited, nothing to agree with.
        assert!(!cites("Accepted publickey for deploy.", "", asked));
        // The question's verb said of a resource the excerpts create: the premise, restated.
        let cited =
            "L619: {\"@message\":\"aws_lambda_function.lambda_function_74: Plan to create\"}";
        let call = "Bash terraform plan -json";
        assert!(!cites(
            "The plan will destroy the Lambda function lambda_function_74.",
            cited,
            call
        ));
        assert!(cites(
            "The plan is to create aws_lambda_function.lambda_function_74.",
            cited,
            call
        ));
    }
}
