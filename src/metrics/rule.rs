//! A rule's metric handles and what a review records through them: four
//! counters per rule (`celhook_rule_*_total`), kept per worker thread
//! ([`super::sharded`]).

use std::sync::OnceLock;

use super::sharded;
use super::RuleResult;

pub(super) const RULE_LABELS: &[&str] = &["crd", "version", "path", "index"];

/// The per-rule families, counted per worker thread (`sharded`): two or
/// three adds per rule per review.
pub(super) const RULE_FAMILIES: [(&str, &str); 4] = [
    (
        "celhook_rule_evaluations_total",
        "Evaluations of x-kubernetes-validations rules, by CRD (ValidationRules/<name> for a rules document), version, schema path and rule index.",
    ),
    ("celhook_rule_failures_total", "Rule evaluations that returned false."),
    (
        "celhook_rule_errors_total",
        "Rule evaluations that failed at run time (errors, cost limits).",
    ),
    (
        "celhook_rule_cost_total",
        "CEL runtime cost spent on each rule (the API server's cost units).",
    ),
];

/// The handles of one rule, attached to the compiled rule when a catalog is
/// bound to a [`super::Metrics`] (`validation::bind_metrics`).
#[derive(Debug, Clone)]
pub struct RuleMetrics {
    series: std::sync::Arc<sharded::Series<4>>,
}

/// The counters of a rule's series, in the order of `RULE_FAMILIES`.
const EVALUATIONS: usize = 0;
const FAILURES: usize = 1;
const ERRORS: usize = 2;
const COST: usize = 3;

impl RuleMetrics {
    pub(super) fn new(series: std::sync::Arc<sharded::Series<4>>) -> Self {
        RuleMetrics { series }
    }

    /// Records one evaluation and its runtime cost.
    pub fn observe(&self, result: RuleResult, cost: u64) {
        self.observe_in(sharded::this_shard(), result, cost);
    }

    fn observe_in(&self, shard: sharded::ShardId, result: RuleResult, cost: u64) {
        self.series.add_in(shard, EVALUATIONS, 1);
        self.series.add_in(shard, COST, cost);
        match result {
            RuleResult::Passed => {}
            RuleResult::Failed => self.series.add_in(shard, FAILURES, 1),
            RuleResult::Error => self.series.add_in(shard, ERRORS, 1),
        }
    }
}

/// One rule evaluation of a review, recorded once the review's answer
/// stands: an inline attempt that runs out of time is answered again, and
/// must not count its rules twice.
#[derive(Debug, Clone, Copy)]
pub struct RuleObservation<'a> {
    pub metrics: &'a RuleMetrics,
    pub result: RuleResult,
    pub cost: u64,
}

impl RuleObservation<'_> {
    /// Records a review's observations, finding the thread's shard once.
    pub fn record_all(observed: &[RuleObservation<'_>]) {
        let shard = sharded::this_shard();
        for o in observed {
            o.metrics.observe_in(shard, o.result, o.cost);
        }
    }
}

/// A slot in a compiled rule for its metric handles; empty until bound.
pub type RuleMetricsSlot = OnceLock<RuleMetrics>;
