//! The operator. (Being written: see issue 3.)

/// Flags of `celcost controller`.
#[derive(Clone, Debug, clap::Args)]
pub struct ControllerArgs {}

/// Runs the operator until a shutdown signal.
pub async fn run(_args: ControllerArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("the controller is not implemented yet".into())
}
