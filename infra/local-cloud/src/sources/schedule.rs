//! The schedule event source: `rate(...)` and `cron(...)` expressions, as EventBridge reads
//! them, invoking the function with its `Input` or a "Scheduled Event".
//!
//! Locally `rate(N seconds)` is accepted too, so that tests need not wait minutes; AWS
//! itself takes minutes and up.

use super::{SourceContext, Stop};
use crate::model::ScheduleSource;
use crate::runtime::FunctionHandle;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime, Time};

/// A parsed schedule expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    Rate(Duration),
    Cron(Box<Cron>),
}

/// Why an expression was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("schedule expression {expression:?}: {reason}")]
pub struct ScheduleError {
    expression: String,
    reason: String,
}

/// An AWS cron expression: minutes, hours, day of month, month, day of week, year.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    minutes: BTreeSet<u32>,
    hours: BTreeSet<u32>,
    /// `None` for `?`.
    days_of_month: Option<BTreeSet<u32>>,
    months: BTreeSet<u32>,
    /// 1 = Sunday, as in AWS; `None` for `?`.
    days_of_week: Option<BTreeSet<u32>>,
    years: BTreeSet<u32>,
}

impl Schedule {
    pub fn parse(expression: &str) -> Result<Self, ScheduleError> {
        let fail = |reason: &str| ScheduleError {
            expression: expression.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = expression.trim();
        if let Some(inner) = trimmed
            .strip_prefix("rate(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let mut parts = inner.split_whitespace();
            let (Some(value), Some(unit), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(fail("expected rate(<value> <unit>)"));
            };
            let value: u64 = value
                .parse()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| fail("the rate must be a positive whole number"))?;
            let unit_seconds = match unit.trim_end_matches('s') {
                "second" => 1,
                "minute" => 60,
                "hour" => 3600,
                "day" => 86_400,
                _ => return Err(fail("the unit must be minutes, hours or days")),
            };
            return Ok(Self::Rate(Duration::from_secs(value * unit_seconds)));
        }
        if let Some(inner) = trimmed
            .strip_prefix("cron(")
            .and_then(|r| r.strip_suffix(')'))
        {
            return Cron::parse(inner)
                .map(|cron| Self::Cron(Box::new(cron)))
                .map_err(|reason| fail(&reason));
        }
        Err(fail("expected rate(...) or cron(...)"))
    }

    /// The first firing strictly after `after`.
    pub fn next_after(&self, after: OffsetDateTime) -> Option<OffsetDateTime> {
        match self {
            Self::Rate(period) => Some(after + *period),
            Self::Cron(cron) => cron.next_after(after),
        }
    }
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn field(
    raw: &str,
    min: u32,
    max: u32,
    names: &[&str],
    what: &str,
) -> Result<BTreeSet<u32>, String> {
    let value = |token: &str| -> Result<u32, String> {
        if let Some(index) = names.iter().position(|n| n.eq_ignore_ascii_case(token)) {
            return Ok(min + index as u32);
        }
        token
            .parse::<u32>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| format!("{what} {token:?} is not in {min}..{max}"))
    };
    let mut set = BTreeSet::new();
    for part in raw.split(',') {
        if part.contains(['L', 'W', '#']) && !names.iter().any(|n| n.eq_ignore_ascii_case(part)) {
            return Err(format!(
                "{what} {part:?}: L, W and # are not supported locally"
            ));
        }
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (
                range,
                step.parse::<u32>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("{what} step {step:?} is not a positive number"))?,
            ),
            None => (part, 1),
        };
        let (from, to) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else if part.contains('/') {
            (value(range)?, max)
        } else {
            let v = value(range)?;
            (v, v)
        };
        if from > to {
            return Err(format!("{what} range {range:?} runs backwards"));
        }
        set.extend((from..=to).step_by(step as usize));
    }
    Ok(set)
}

impl Cron {
    fn parse(inner: &str) -> Result<Self, String> {
        let fields: Vec<&str> = inner.split_whitespace().collect();
        let [minutes, hours, dom, months, dow, years] = fields[..] else {
            return Err("a cron expression has six fields: minutes hours day-of-month month day-of-week year".into());
        };
        if (dom == "?") == (dow == "?") {
            return Err("exactly one of day-of-month and day-of-week must be ?".into());
        }
        Ok(Self {
            minutes: field(minutes, 0, 59, &[], "minute")?,
            hours: field(hours, 0, 23, &[], "hour")?,
            days_of_month: (dom != "?")
                .then(|| field(dom, 1, 31, &[], "day of month"))
                .transpose()?,
            months: field(months, 1, 12, &MONTHS, "month")?,
            days_of_week: (dow != "?")
                .then(|| field(dow, 1, 7, &WEEKDAYS, "day of week"))
                .transpose()?,
            years: field(years, 1970, 2199, &[], "year")?,
        })
    }

    fn day_matches(&self, date: Date) -> bool {
        match (&self.days_of_month, &self.days_of_week) {
            (Some(days), _) => days.contains(&(date.day() as u32)),
            (None, Some(weekdays)) => {
                weekdays.contains(&(date.weekday().number_days_from_sunday() as u32 + 1))
            }
            (None, None) => true,
        }
    }

    fn next_after(&self, after: OffsetDateTime) -> Option<OffsetDateTime> {
        // Walk forward a field at a time, skipping whole years, months, days and hours that
        // cannot match, so that even a yearly schedule is found in a few hundred steps.
        let mut t =
            after.replace_second(0).ok()?.replace_nanosecond(0).ok()? + Duration::from_secs(60);
        let limit = after + Duration::from_secs(86_400 * 366 * 5);
        while t <= limit {
            let date = t.date();
            if !self.years.contains(&(date.year() as u32)) {
                let next = Date::from_calendar_date(date.year() + 1, Month::January, 1).ok()?;
                t = next.with_time(Time::MIDNIGHT).assume_utc();
            } else if !self.months.contains(&(date.month() as u32)) {
                let (year, month) = match date.month() {
                    Month::December => (date.year() + 1, Month::January),
                    month => (date.year(), month.next()),
                };
                let next = Date::from_calendar_date(year, month, 1).ok()?;
                t = next.with_time(Time::MIDNIGHT).assume_utc();
            } else if !self.day_matches(date) {
                t = date.next_day()?.with_time(Time::MIDNIGHT).assume_utc();
            } else if !self.hours.contains(&(t.hour() as u32)) {
                t = t.replace_minute(0).ok()? + Duration::from_secs(3600);
            } else if !self.minutes.contains(&(t.minute() as u32)) {
                t += Duration::from_secs(60);
            } else {
                return Some(t);
            }
        }
        None
    }
}

pub(super) async fn run(
    source: ScheduleSource,
    function: FunctionHandle,
    context: SourceContext,
    mut stop: Stop,
) {
    let schedule = match Schedule::parse(&source.expression) {
        Ok(schedule) => schedule,
        Err(err) => {
            tracing::error!(function = function.name(), error = %err, "schedule not started");
            return;
        }
    };
    let trigger = format!("schedule {}", source.event_name);
    let rule_arn = format!(
        "arn:aws:events:{}:{}:rule/{}-{}",
        context.region,
        context.account_id,
        function.name(),
        source.event_name
    );
    let mut last = OffsetDateTime::now_utc();
    while let Some(next) = schedule.next_after(last) {
        let wait = (next - OffsetDateTime::now_utc())
            .try_into()
            .unwrap_or(Duration::ZERO);
        if stop.sleep(wait).await {
            return;
        }
        last = next;
        let payload = match &source.input {
            Some(input) => input.clone(),
            None => json!({
                "version": "0",
                "id": uuid::Uuid::new_v4().to_string(),
                "detail-type": "Scheduled Event",
                "source": "aws.events",
                "account": context.account_id,
                "time": next.format(&Rfc3339).unwrap_or_default(),
                "region": context.region,
                "resources": [rule_arn],
                "detail": {},
            })
            .to_string(),
        };
        // As EventBridge: an invocation that fails is not replayed on the next tick.
        if let Err(err) = function.invoke(&trigger, payload.into()).await {
            tracing::debug!(function = function.name(), error = %err, "scheduled invocation failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> OffsetDateTime {
        OffsetDateTime::parse(rfc3339, &Rfc3339).expect("a test time")
    }

    #[test]
    fn next_firings() {
        // (expression, after, the next firing)
        for (expression, after, expected) in [
            (
                "rate(5 minutes)",
                "2026-11-30T18:00:00Z",
                "2026-11-30T18:05:00Z",
            ),
            (
                "rate(1 hour)",
                "2026-11-30T18:00:00Z",
                "2026-11-30T19:00:00Z",
            ),
            (
                "rate(2 seconds)",
                "2026-11-30T18:00:00Z",
                "2026-11-30T18:00:02Z",
            ),
            (
                "cron(0/15 * * * ? *)",
                "2026-11-30T18:07:30Z",
                "2026-11-30T18:15:00Z",
            ),
            // 2026-11-28 is a Saturday: the next weekday noon is Monday the 30th.
            (
                "cron(0 12 ? * MON-FRI *)",
                "2026-11-28T13:00:00Z",
                "2026-11-30T12:00:00Z",
            ),
            // The first of the month and the 29th of February roll over into later years.
            (
                "cron(30 6 1 * ? *)",
                "2026-12-15T00:00:00Z",
                "2027-01-01T06:30:00Z",
            ),
            (
                "cron(0 0 29 FEB ? *)",
                "2026-12-15T00:00:00Z",
                "2028-02-29T00:00:00Z",
            ),
        ] {
            let schedule = Schedule::parse(expression).expect(expression);
            assert_eq!(
                schedule.next_after(at(after)),
                Some(at(expected)),
                "{expression} after {after}"
            );
        }
    }

    #[test]
    fn bad_expressions_say_why() {
        for (expression, reason) in [
            (
                "rate(0 minutes)",
                "the rate must be a positive whole number",
            ),
            (
                "rate(5 fortnights)",
                "the unit must be minutes, hours or days",
            ),
            (
                "cron(* * * * *)",
                "a cron expression has six fields: minutes hours day-of-month month day-of-week year",
            ),
            (
                "cron(0 12 * * MON *)",
                "exactly one of day-of-month and day-of-week must be ?",
            ),
            ("cron(0 25 * * ? *)", "hour \"25\" is not in 0..23"),
            (
                "cron(0 12 L * ? *)",
                "day of month \"L\": L, W and # are not supported locally",
            ),
            ("every day", "expected rate(...) or cron(...)"),
        ] {
            let err = Schedule::parse(expression).unwrap_err();
            assert_eq!(err.reason, reason, "{expression}");
            assert_eq!(
                err.to_string(),
                format!("schedule expression {expression:?}: {reason}")
            );
        }
    }
}
