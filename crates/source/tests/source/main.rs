//! The Git source's integration tests, one test binary: fetching and packing against real
//! servers (`git http-backend` and sshd from `ferroflux-testkit`) and repositories made by the
//! `git` program (`repo`); pushing back what image automation commits (`push`).

mod proxy;
mod push;
mod repo;
mod source;
