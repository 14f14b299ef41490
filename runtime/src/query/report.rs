//! What a query's report says of its operators: what they hold, item by item, and what they
//! dropped, each named as reports name an operator.

use punctual_core::ops::NodeStats;
use punctual_core::Time;
use punctual_engine::Driver;

use super::held_payloads::Shows;
use super::running::{HeldItem, OperatorDropItem, MAX_REPORTED_HELD};

/// How reports name an operator: its name and label, or its name and node number.
pub(crate) fn node_label(n: &NodeStats<'_>) -> String {
    n.label.map_or_else(
        || format!("{} {}", n.operator, n.node),
        |l| format!("{} `{l}`", n.operator),
    )
}

/// What the driver's operators hold, item by item (the first [`MAX_REPORTED_HELD`]), with the
/// payloads `show` knows shown: [`QueryReport::held_items`](super::QueryReport::held_items).
pub(crate) fn held_items_shown(driver: &Driver, show: &Shows) -> Vec<HeldItem> {
    let mut items = Vec::new();
    driver.for_each_held(|n, h| {
        if items.len() < MAX_REPORTED_HELD {
            items.push(HeldItem {
                operator: node_label(n),
                what: h.what,
                start: h.start,
                end: h.end,
                payload: show.show(h.payload),
            });
        }
    });
    items
}

/// What a driver's operators hold, item by item: [`QueryReport::held_items`](super::QueryReport::held_items) for a driver run
/// by hand (the conformance runner), payloads of the built-in types shown.
pub fn held_items(driver: &Driver) -> Vec<HeldItem> {
    held_items_shown(driver, &Shows::default())
}

/// Takes the operators' drops not taken yet: each logged (`warn`), the first
/// [`MAX_REPORTED_HELD`] of the run kept in `kept` for the report.
pub(crate) fn keep_drops(query: &str, driver: &mut Driver, kept: &mut Vec<OperatorDropItem>) {
    let mut drops = Vec::new();
    driver.take_operator_drops(&mut drops);
    for (label, operator, drop) in drops {
        if kept.len() < MAX_REPORTED_HELD {
            let (start, end) = match drop.kind {
                punctual_core::EventKind::Point(t) => (t, t.next_tick()),
                punctual_core::EventKind::Interval { start, end }
                | punctual_core::EventKind::EndEdge { start, end } => (start, end),
                punctual_core::EventKind::StartEdge(s) => (s, Time::INF),
            };
            kept.push(OperatorDropItem {
                operator: label.clone(),
                start,
                end,
                reason: drop.reason.clone(),
            });
        }
        tracing::warn!(
            query = %query,
            node = %label,
            operator,
            event = ?drop.kind,
            "an operator dropped an event: {}",
            drop.reason
        );
    }
}
