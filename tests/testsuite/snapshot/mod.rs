//! The snapshot (design §3.1 step 2): git's own answer as the oracle, big
//! files streamed, and the source's private stat cache.

mod oracle;
mod stat_cache;
mod stream;
