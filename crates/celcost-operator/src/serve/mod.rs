//! What keeps the operator running and observable: [`watch`], watches that come back as soon as
//! their API server does; [`http`], the admin server (`/healthz`, `/readyz`, `/watches`,
//! `/metrics`); [`metrics`], the Prometheus metrics it serves.

pub mod http;
pub mod metrics;
pub mod watch;
