//! The judging of part 3: the size the table picks for each binary, and whether the
//! template's `MemorySize` follows it within the run's noise.

use super::{COST_TOLERANCE, FunctionSizes, P90_TOLERANCE, Part3, SizeRow, is_baseline};
use std::fmt::Write as _;

impl FunctionSizes {
    /// The size with the lowest warm cost per million; among the sizes within
    /// [`COST_TOLERANCE`] of that cost, the one with the lowest warm p90 (the smaller on a tie).
    pub fn recommended(&self) -> Option<&SizeRow> {
        let band = self.cost_band()?;
        self.measured()
            .filter(|row| row.cost_per_million() <= band)
            .min_by(|a, b| {
                a.warm(0.9)
                    .total_cmp(&b.warm(0.9))
                    .then(a.memory_mb.cmp(&b.memory_mb))
            })
    }

    /// Whether `memory_mb` is as good a choice as the pick within the run's noise: its warm
    /// cost in the [`COST_TOLERANCE`] band and its warm p90 within [`P90_TOLERANCE`] of the
    /// pick's.
    pub fn follows(&self, memory_mb: u32) -> bool {
        let (Some(best), Some(band)) = (self.recommended(), self.cost_band()) else {
            return false;
        };
        self.measured().any(|row| {
            row.memory_mb == memory_mb
                && row.cost_per_million() <= band
                && row.warm(0.9) <= best.warm(0.9) * (1.0 + P90_TOLERANCE)
        })
    }

    /// The highest warm cost per million that competes on p90: [`COST_TOLERANCE`] above the
    /// lowest.
    fn cost_band(&self) -> Option<f64> {
        let lowest = self
            .measured()
            .map(SizeRow::cost_per_million)
            .min_by(f64::total_cmp)?;
        Some(lowest * (1.0 + COST_TOLERANCE))
    }
}

/// The summary's lines for part 3: whether the template's sizes are the table's.
pub fn summary(out: &mut String, part3: &Part3) {
    let mut missed = Vec::new();
    let mut unclean = Vec::new();
    let mut no_scenario = Vec::new();
    for function in part3.functions.iter().filter(|f| !is_baseline(&f.binary)) {
        let Some(template) = function.template_mb else {
            continue;
        };
        let failed = function
            .sizes
            .iter()
            .any(|row| row.invocations_failed > 0 || row.init_failures > 0);
        match function.recommended() {
            Some(_) if function.follows(template) => {}
            Some(best) => missed.push(format!(
                "{}: template {template}, table {}",
                function.binary, best.memory_mb
            )),
            // The harness has no event for it: nothing to judge, and nothing failed.
            None if !failed => no_scenario.push(function.binary.clone()),
            None => unclean.push(function.binary.clone()),
        }
    }
    let _ = writeln!(
        out,
        "- Template MemorySize follows the table of part 3 (lowest warm cost per million; \
         within {:.0}% of it, lowest warm p90; the template's size passes within {:.0}% of \
         that p90, the run-to-run noise): {}{}{}",
        COST_TOLERANCE * 100.0,
        P90_TOLERANCE * 100.0,
        if missed.is_empty() && unclean.is_empty() {
            "MET".to_owned()
        } else if missed.is_empty() {
            "MISSED".to_owned()
        } else {
            format!("MISSED — {}", missed.join(", "))
        },
        crate::report::listed("; no clean measurement: ", &unclean),
        crate::report::listed(
            "; not measured (no happy-path event in the harness): ",
            &no_scenario
        )
    );
    let (init, invocations) = (part3.init_failures(), part3.invocations_failed());
    if init + invocations > 0 {
        let _ = writeln!(
            out,
            "- Part 3 off the happy path: {init} init failures, {invocations} failed invocations"
        );
    }
}
