//! Real-model test of the model's part of a summary (issue 17, tier 3): on the small model,
//! greedy, the model reads the reduction, picks excerpts by number, and the result keeps the
//! fact the question is about, quotes every excerpt as the file has it, and states nothing
//! the output does not say.

use toolsum::backend::Narrator;
use toolsum::engine::{Engine, EngineOptions};
use toolsum::guard::{self, GuardRequest, Limits, ResultKind};
use toolsum::tokenizer::GgufTokenizer;

use crate::util::model_path;

/// A deploy tool's event log: long, all different (no template repeats, nothing rare), one
/// line says the database migration was rolled back, and no word of the question ("did the
/// schema change go through?") is in it.
fn deploy_log() -> String {
    let steps = [
        "resolved artifact registry.example.com/shop/api@sha256:4be1c0d2 for release r-2291",
        "uploaded bundle api-r-2291.tar.zst (48,211,904 bytes) to s3://deploy-artifacts/shop/api",
        "warmed 12 of 12 cache shards for tenant eu-west-2 in 4.2 s",
        "rendered 37 Kubernetes manifests from chart shop-api 7.4.1 with values prod-eu.yaml",
        "drained node ip-10-40-3-17 (14 pods evicted, 0 blocked by PodDisruptionBudget)",
        "health check /livez answered 200 on 9 of 9 replicas after 31 s",
        "feature flag checkout-v3 rollout moved from 10% to 25% for cohort beta",
        "migration 0187_add_invoice_currency: applied on primary, replicating to 2 standbys",
        "migration 0187_add_invoice_currency: lock wait exceeded 30 s on table invoices; transaction rolled back, schema left at 0186",
        "CDN purge of 1,204 paths under /static/api/ acknowledged by edge in 6.8 s",
        "rotated 3 service account tokens for namespace shop-prod (oldest 89 days)",
        "synthetic checkout journey passed in 2.41 s from 4 regions",
        "error budget for api-availability at 71.3% remaining for the 28-day window",
        "autoscaler target for shop-api set to min 6 / max 24 replicas (was 6 / 18)",
        "pager rotation handed to team payments-oncall until 09:00 UTC",
    ];
    let mut s = String::new();
    for (i, step) in steps.iter().cycle().take(15 * 7).enumerate() {
        let round = i / steps.len();
        let pad = format!(
            " trace_id={:032x} span_id={:016x} host=deploy-runner-{} attempt={} labels=env:prod,region:eu-west-2,team:shop,pipeline:release-train,trigger:merge-queue",
            0x9e3779b97f4a7c15u64.wrapping_mul(i as u64 + 1) as u128 * 7919,
            0xc2b2ae3d27d4eb4fu64.wrapping_mul(i as u64 + 3),
            i % 5,
            round + 1
        );
        // The migration is attempted once (round 3); every other round it is already applied.
        let step = if step.starts_with("migration") {
            if round == 3 {
                step.to_string()
            } else {
                continue;
            }
        } else {
            format!("round {}: {step}", round + 1)
        };
        s.push_str(&format!(
            "2026-03-04T01:{:02}:{:02}Z INFO deployer {step}{pad}\n",
            i / 60,
            i % 60
        ));
    }
    s
}

fn summarize(
    text: &str,
    engine: Option<&mut Engine>,
    counter: &GgufTokenizer,
) -> guard::GuardResponse {
    summarize_for(text, "Did the schema change go through?", engine, counter)
}

fn summarize_for(
    text: &str,
    intent: &str,
    engine: Option<&mut Engine>,
    counter: &GgufTokenizer,
) -> guard::GuardResponse {
    let session = tempfile::tempdir().unwrap();
    let req = GuardRequest {
        content: text.as_bytes().to_vec(),
        tool: "Bash".to_string(),
        args: Some(serde_json::json!({"command": "deployctl logs release-train --last"})),
        intent: Some(intent.to_string()),
        session_dir: session.path().to_path_buf(),
        limits: Limits {
            token_limit: 2_000,
            model_ms: if engine.is_some() { 120_000 } else { 0 },
            ..Limits::default()
        },
        keep_binary_inline: false,
        deadline: None,
        source: None,
        frame: String::new(),
    };
    let narrator = engine.map(|e| e as &mut dyn Narrator);
    let r = guard::guard(req, Some(counter), narrator).unwrap();
    assert_eq!(r.kind, ResultKind::Summary, "{}", r.text);
    r
}

#[test]
fn the_model_picks_excerpts_that_are_quoted_verbatim_and_keeps_the_fact() {
    let path = model_path("small");
    let counter = GgufTokenizer::from_gguf_path(&path).unwrap();
    let text = deploy_log();
    let without = summarize(&text, None, &counter);
    let mut engine = Engine::load(&EngineOptions {
        model_path: path,
        system_prompt: Some(toolsum::guard::prompt::SYSTEM_PROMPT.to_string()),
        ..EngineOptions::default()
    })
    .unwrap();
    let with = summarize(&text, Some(&mut engine), &counter);
    assert!(without.model.is_none());
    assert!(
        with.model.is_some(),
        "the model did not run: {:?}",
        with.reason
    );
    assert!(with.timings_ms.decode > 0.0, "{:?}", with.reason);
    let fact = "transaction rolled back, schema left at 0186";
    for r in [&without, &with] {
        assert!(r.text.contains(fact), "{}", r.text);
    }
    // Every quoted excerpt is the file's line, whole or cut, never reworded.
    let lines: Vec<&str> = text.lines().collect();
    for l in with.text.lines() {
        let Some((n, body)) = l
            .strip_prefix('L')
            .and_then(|r| r.split_once(": "))
            .and_then(|(n, b)| Some((n.parse::<usize>().ok()?, b)))
        else {
            continue;
        };
        let body = body
            .strip_prefix("[")
            .map_or(body, |b| b.split_once("] ").map_or(b, |x| x.1));
        for piece in body
            .split("…[cut]…")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            assert!(
                lines[n - 1].contains(piece),
                "L{n} is not the file's line:\n{piece}\n{}",
                lines[n - 1]
            );
        }
    }
    // The Status is the model's only when it quotes the excerpts it chose; either way it
    // does not claim the run failed or succeeded on words the output lacks.
    let status = with.text.lines().next().unwrap();
    assert!(
        !status.contains("did not") || status.contains("0186"),
        "{status}"
    );
}

/// A cluster controller's log: 1,200 routine lines and, spread through them, 40 different
/// lines saying which shard moved where. More answer lines than a summary can quote.
fn rebalance_log() -> String {
    let mut s = String::new();
    for i in 0..1_240usize {
        let t = format!(
            "2026-03-04T02:{:02}:{:02}.{:03}Z",
            i / 600,
            (i / 10) % 60,
            i % 1000
        );
        if i % 31 == 7 {
            let k = i / 31;
            s.push_str(&format!(
                "{t} INFO balancer shard orders-{:03} rebalanced from node-{} to node-{} ({} MiB, {} ms)\n",
                k * 7 % 101,
                k % 6,
                (k + 3) % 6,
                40 + k * 13 % 90,
                800 + k * 37 % 500
            ));
        } else {
            s.push_str(&format!(
                "{t} DEBUG heartbeat node-{} lag={}ms queue={} gc_pause={}ms\n",
                i % 6,
                i * 7 % 40,
                i * 11 % 90,
                i * 3 % 17
            ));
        }
    }
    s
}

#[test]
fn a_fact_only_the_models_selection_brings_in() {
    let path = model_path("small");
    let counter = GgufTokenizer::from_gguf_path(&path).unwrap();
    let text = rebalance_log();
    let intent = "Which shards were rebalanced, and to which node?";
    let without = summarize_for(&text, intent, None, &counter);
    let mut engine = Engine::load(&EngineOptions {
        model_path: path,
        system_prompt: Some(toolsum::guard::prompt::SYSTEM_PROMPT.to_string()),
        ..EngineOptions::default()
    })
    .unwrap();
    let with = summarize_for(&text, intent, Some(&mut engine), &counter);
    assert!(
        with.model.is_some(),
        "the model did not run: {:?}",
        with.reason
    );
    let lines: Vec<&str> = text.lines().collect();
    // Rebalance lines quoted whole, by line number.
    let quoted = |r: &guard::GuardResponse| -> Vec<usize> {
        r.text
            .lines()
            .filter_map(|l| {
                let (n, body) = l.strip_prefix('L')?.split_once(": ")?;
                let n: usize = n.parse().ok()?;
                let line = lines.get(n.checked_sub(1)?)?;
                (line.contains(" rebalanced from ") && body.ends_with(line)).then_some(n)
            })
            .collect()
    };
    let before = quoted(&without);
    let after = quoted(&with);
    assert!(!before.is_empty(), "{}", without.text);
    let added: Vec<usize> = after
        .iter()
        .copied()
        .filter(|n| !before.contains(n))
        .collect();
    assert!(
        !added.is_empty(),
        "the model's choice added no answer line:\nwithout:\n{}\nwith:\n{}",
        without.text,
        with.text
    );
    // What it added is the file's line, shard and target node as written.
    for n in added {
        let shard = lines[n - 1].split(" shard ").nth(1).unwrap();
        assert!(with.text.contains(shard), "L{n}");
        assert!(!without.text.contains(shard), "L{n} was already shown");
    }
}
