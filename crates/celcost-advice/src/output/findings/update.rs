//! `celcost diff`'s findings of an update verdict (HEAD applied over BASE as the cluster stores
//! it): the errors of a refused update; for an accepted one, the create's errors demoted to
//! warnings and what the unchanged schema holds.

use super::{Ctx, Finding, HELD_BY_UNCHANGED_SCHEMA, Level, UPDATE_REFUSED, one_line};
use celcost_core::report::PER_RULE_COST_LIMIT;
use celcost_core::report::format::{num, percent};

/// `celcost diff`: an object with an update verdict (HEAD applied over BASE). A refused update
/// gives its errors; an accepted one turns the create's errors of the object (from `start` in
/// `out`) into warnings, since the cluster that stores BASE accepts it, and names what the
/// unchanged schema lets through.
pub(super) fn update_findings(c: &Ctx<'_>, start: usize, out: &mut Vec<Finding>) {
    let r = c.r;
    let Some(u) = &r.update else {
        return;
    };
    let version = &r.kubernetes_version;
    if u.stopped.is_some() {
        return;
    }
    if u.valid {
        for f in out[start..].iter_mut().filter(|f| f.level == Level::Error) {
            f.level = Level::Warning;
            f.message.push_str(&format!(
                " That is on create: applied over BASE (as the cluster stores it) the object is an update, which Kubernetes {version} accepts."
            ));
        }
        for h in &u.held {
            let rule = r
                .schemas
                .iter()
                .filter(|s| s.schema_field_path == h.schema_field_path)
                .flat_map(|s| s.rules.iter())
                .find(|x| x.path == h.path && x.index == h.index);
            let location = rule.and_then(|x| {
                if h.what == "messageExpression" {
                    x.message_expression_or_rule_location()
                } else {
                    x.location.as_ref()
                }
            });
            out.push(c.finding(
                HELD_BY_UNCHANGED_SCHEMA,
                format!(
                    "celcost: {} over the limit, held by the unchanged schema",
                    h.what
                ),
                format!(
                    "{}: {} `{}` on {} [{}] costs {} = {} of the per-expression limit. Kubernetes {version} accepts the update because the schema of {} is unchanged; an update that changes that schema is refused until it fits: {}",
                    c.object(),
                    h.what,
                    one_line(&h.expression, 200),
                    h.path,
                    h.index,
                    num(h.cost),
                    percent(h.cost, PER_RULE_COST_LIMIT),
                    h.versions.join(", "),
                    h.error
                ),
                location,
            ));
        }
        return;
    }
    for (i, e) in u.errors.iter().enumerate() {
        let path = u.error_parts.get(i).map_or("", |p| p.field.as_str());
        let location = r.schemas.iter().find_map(|s| {
            if s.schema_field_path == path {
                return s.location.as_ref();
            }
            s.rules.iter().find_map(|x| {
                let node = x.rule_field_path.strip_suffix(".rule")?;
                if x.rule_field_path == path {
                    x.location.as_ref()
                } else if path.strip_prefix(node) == Some(".messageExpression") {
                    x.message_expression_or_rule_location()
                } else {
                    None
                }
            })
        });
        out.push(c.finding(
            UPDATE_REFUSED,
            format!("celcost: update refused by Kubernetes {version}"),
            format!(
                "{}: applied over BASE ({}), the update is refused: {e}",
                c.object(),
                u.stored_source
            ),
            location,
        ));
    }
}
