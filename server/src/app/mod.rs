//! The application: the command line, start-up and shutdown that assemble the layers below into
//! a running server, and the fronts that run as clients of one (`appserver acp` for editors,
//! `appserver exec`, `appserver doctor`).

pub(crate) mod acp;
pub(crate) mod blocking;
pub(crate) mod cli;
pub(crate) mod doctor;
pub(crate) mod exec;
pub(crate) mod startup;
