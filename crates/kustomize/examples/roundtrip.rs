fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let docs = ferroflux_kustomize::yaml::parse::parse_documents(&text).unwrap();
    print!("{}", ferroflux_kustomize::render_yaml(&docs));
}
