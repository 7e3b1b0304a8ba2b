//! The devcluster's integration tests, one test binary (a module per area): the API server
//! through kube-rs, raw HTTPS and the real `kubectl` (`ferroflux_testkit::Kubectl`).

mod access;
mod api;
mod clients;
mod crdschema;
mod dataplane;
mod faithfulness;
mod fuzz;
mod kubectl;
mod lifecycle;
mod podapi;

/// The API server's Status of a refused request; any other error fails the test.
fn api_err(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}
