//! The bucket crate's integration tests, one binary (a module per area): the S3 client and the
//! fetch against a real S3 server (`s3s-fs`, from `ferroflux-testkit`).

mod s3fs;
