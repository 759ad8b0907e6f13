//! Progress on stderr (indicatif), drawn by the commands around the domain's work: the domain
//! reports what it is doing through callbacks and never draws.

use std::net::SocketAddr;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How often a spinner turns.
const TICK: Duration = Duration::from_millis(120);

/// `verify`'s spinner while it sends to `to` for `granted`.
pub fn sending(to: SocketAddr, granted: Duration) -> ProgressBar {
    let p = ProgressBar::new(granted.as_millis().try_into().unwrap_or(u64::MAX));
    p.set_style(
        ProgressStyle::with_template("{spinner} sending to {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    p.set_message(to.to_string());
    p.enable_steady_tick(TICK);
    p
}
