import ArgumentParser
import Foundation
import Synchronization

/// The figures of one `continuum-bench` run, for `--json`: every figure and baseline a subcommand prints, by a dotted
/// name (Docs/BENCHMARKS.md lists them), gathered while it runs and printed at the end as one JSON object.
///
/// A subcommand's run is wrapped in ``run(command:json:_:)``, which makes the report the task's
/// ``current`` one (a task-local value, so helpers deep in a benchmark add figures without it being passed down,
/// and two runs in one process never mix).
final class BenchReport: Sendable {
    @TaskLocal static var current: BenchReport?

    let command: String
    /// When set, stdout carries only the JSON object: the printed lines go to stderr.
    let json: Bool
    private let state = Mutex<State>(State())

    private struct State {
        var figures: [String: Double] = [:]
        var labels: [String: String] = [:]
    }

    init(command: String, json: Bool) {
        self.command = command
        self.json = json
    }

    /// Notes a figure; a name given twice keeps the last value.
    func add(_ name: String, _ value: Double) {
        state.withLock { $0.figures[name] = value }
    }

    /// Notes a text beside the figures (the node's commit, a set skipped, the machine).
    func label(_ name: String, _ value: String) {
        state.withLock { $0.labels[name] = value }
    }

    /// The JSON object: `command`, `machine` (cores, host), `labels`, and `figures` with every figure by name (a
    /// figure that is not a number, such as the median of nothing, is left out: JSON has no NaN).
    func encoded() throws -> Data {
        let (figures, labels) = state.withLock { ($0.figures, $0.labels) }
        let object: [String: Any] = [
            "command": command,
            "machine": [
                "cores": ProcessInfo.processInfo.activeProcessorCount,
                "host": ProcessInfo.processInfo.hostName,
            ],
            "labels": labels,
            "figures": figures.filter { $0.value.isFinite },
        ]
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    }

    /// Runs a subcommand's measurement with a report of its own: with `json`, the lines it prints go to stderr, and
    /// the report is printed on stdout at the end (only then: a run that fails prints no object).
    static func run(command: String, json: Bool, _ body: () async throws -> Void) async throws {
        let report = BenchReport(command: command, json: json)
        try await $current.withValue(report) { try await body() }
        guard json else { return }
        FileHandle.standardOutput.write(try report.encoded() + Data("\n".utf8))
    }
}

/// The option every subcommand takes.
struct ReportOptions: ParsableArguments {
    @Flag(help: "Print the figures and baselines as one JSON object on stdout; the lines go to stderr.")
    var json = false
}

/// Prints a line at once, even when stdout is a file (no buffering); on stderr when the run's report is JSON. Each
/// figure of `figures` is added to the run's report.
func say(_ line: String, _ figures: KeyValuePairs<String, Double> = [:]) {
    let report = BenchReport.current
    for (name, value) in figures { report?.add(name, value) }
    let handle = report?.json == true ? FileHandle.standardError : FileHandle.standardOutput
    handle.write(Data((line + "\n").utf8))
}
