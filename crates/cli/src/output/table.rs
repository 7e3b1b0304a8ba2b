//! Tables in the flux CLI's layout: cells padded to the column width and separated by tabs,
//! every data row ending in a tab, the header's last cell padded one wider instead.

/// Renders a table exactly as `flux get` prints it. A cell holding several lines (Flux's
/// change-set messages) spans as many output lines, the other cells of its row continued by
/// blank ones, as flux's table writer does; column widths count the longest line. With no
/// headers (`flux events --watch` after its first event) no header line is printed.
pub fn flux_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = if headers.is_empty() {
        rows.iter().map(Vec::len).max().unwrap_or(0)
    } else {
        headers.len()
    };
    let mut widths: Vec<usize> = (0..columns)
        .map(|i| headers.get(i).map_or(0, |h| h.chars().count()))
        .collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            let longest = cell.split('\n').map(|l| l.chars().count()).max();
            widths[i] = widths[i].max(longest.unwrap_or(0));
        }
    }
    let pad = |s: &str, width: usize| {
        let mut out = s.to_string();
        out.extend(std::iter::repeat_n(
            ' ',
            width.saturating_sub(s.chars().count()),
        ));
        out
    };
    let mut out = String::new();
    if !headers.is_empty() {
        let mut header: Vec<String> = Vec::with_capacity(columns);
        for (i, h) in headers.iter().enumerate() {
            let extra = usize::from(i + 1 == columns);
            header.push(pad(h, widths[i] + extra));
        }
        out.push_str(&header.join("\t"));
        out.push('\n');
    }
    for row in rows {
        let cells: Vec<Vec<&str>> = (0..columns)
            .map(|i| row.get(i).map_or(vec![""], |c| c.split('\n').collect()))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            for (cell, width) in cells.iter().zip(&widths) {
                // The table writer fills a shorter cell with two-space lines.
                out.push_str(&pad(cell.get(line).copied().unwrap_or("  "), *width));
                out.push('\t');
            }
            out.push('\n');
        }
    }
    out
}

/// A table printed a row at a time, as `flux get --watch` and `flux events --watch` print
/// theirs: the header with the first row only, each row padded to itself (flux's table writer,
/// run once per row).
pub struct StreamedRows {
    headers: Vec<&'static str>,
    first: bool,
}

impl StreamedRows {
    pub fn new(headers: Vec<&'static str>) -> StreamedRows {
        StreamedRows {
            headers,
            first: true,
        }
    }

    /// The lines of one row, after the header when it is the first.
    pub fn row(&mut self, cells: Vec<String>) -> String {
        let headers: &[&str] = if std::mem::take(&mut self.first) {
            &self.headers
        } else {
            &[]
        };
        flux_table(headers, &[cells])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|s| s.to_string()).collect()
    }

    const HEADERS: [&str; 5] = ["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"];

    /// `flux get sources git`, golden `get/get.golden` of the flux CLI.
    #[test]
    fn matches_flux_get_golden() {
        let msg = "Fetched revision: main@sha1:696f056d";
        let rows: Vec<Vec<String>> = ["podinfo", "podinfo-shard1", "podinfo-shard2"]
            .iter()
            .map(|n| row(&[n, "main@sha1:696f056d", "False", "True", msg]))
            .collect();
        let want = "NAME          \tREVISION          \tSUSPENDED\tREADY\tMESSAGE                              \n\
podinfo       \tmain@sha1:696f056d\tFalse    \tTrue \tFetched revision: main@sha1:696f056d\t\n\
podinfo-shard1\tmain@sha1:696f056d\tFalse    \tTrue \tFetched revision: main@sha1:696f056d\t\n\
podinfo-shard2\tmain@sha1:696f056d\tFalse    \tTrue \tFetched revision: main@sha1:696f056d\t\n";
        assert_eq!(flux_table(&HEADERS, &rows), want);
    }

    /// Golden `get/get_status_ready_not_true.golden`: empty revisions and an Unknown status.
    #[test]
    fn matches_flux_golden_with_empty_cells() {
        let rows = vec![
            row(&[
                "gr-failed",
                "",
                "False",
                "False",
                "failed to checkout and determine revision",
            ]),
            row(&[
                "gr-unknown",
                "",
                "False",
                "Unknown",
                "reconciliation in progress",
            ]),
        ];
        let want = "NAME      \tREVISION\tSUSPENDED\tREADY  \tMESSAGE                                   \n\
gr-failed \t        \tFalse    \tFalse  \tfailed to checkout and determine revision\t\n\
gr-unknown\t        \tFalse    \tUnknown\treconciliation in progress               \t\n";
        assert_eq!(flux_table(&HEADERS, &rows), want);
    }

    /// Golden `kustomization/get_kustomization_from_git.golden`.
    #[test]
    fn matches_flux_kustomization_golden() {
        let rows = vec![row(&[
            "tkfg",
            "6.3.5@sha1:67e2c98a",
            "False",
            "True",
            "Applied revision: 6.3.5@sha1:67e2c98a",
        ])];
        let want = "NAME\tREVISION           \tSUSPENDED\tREADY\tMESSAGE                               \n\
tkfg\t6.3.5@sha1:67e2c98a\tFalse    \tTrue \tApplied revision: 6.3.5@sha1:67e2c98a\t\n";
        assert_eq!(flux_table(&HEADERS, &rows), want);
    }

    /// A multi-line message (a change set) spans several lines, as flux's table writer
    /// prints it: widths count the longest line, other cells continue blank.
    #[test]
    fn multi_line_cells_span_several_lines() {
        let rows = vec![
            row(&[
                "2m",
                "Normal",
                "Progressing",
                "Namespace/podinfo created\nService/podinfo/podinfo created",
            ]),
            row(&[
                "1m",
                "Normal",
                "ReconciliationSucceeded",
                "Reconciliation finished",
            ]),
        ];
        let want = concat!(
            "LAST SEEN\tTYPE  \tREASON                 \tMESSAGE                         \n",
            "2m       \tNormal\tProgressing            \tNamespace/podinfo created      \t\n",
            "         \t      \t                       \tService/podinfo/podinfo created\t\n",
            "1m       \tNormal\tReconciliationSucceeded\tReconciliation finished        \t\n",
        );
        assert_eq!(
            flux_table(&["LAST SEEN", "TYPE", "REASON", "MESSAGE"], &rows),
            want
        );
    }
}
