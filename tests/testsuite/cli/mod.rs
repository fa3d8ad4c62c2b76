//! What a person or a script meets at the command line: help, man pages
//! and completions (generated and dynamic), terminal behaviour, the JSON
//! contract, the errors of design §5, and hints that work when followed.

mod completion;
mod errors;
mod examples;
mod generated;
mod hints;
mod io;
mod json;
mod smoke;
