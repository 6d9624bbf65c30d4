import ArgumentParser
import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Crypto
import Foundation
import Logging

/// `continuum-bench`: the project's benchmarks. Build in release mode; every figure is printed beside a baseline
/// measured in the same run on the same machine.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continuum-bench",
        abstract: "Benchmarks, each beside a baseline measured in the same run.",
        subcommands: [
            StoreBench.self, SyncBench.self, PushBench.self, APIBench.self, CrowdBench.self, VsSyncthingBench.self,
        ]
    )
}

/// A subcommand: its measurement runs with a report of its own (``BenchReport``), printed as JSON with `--json`.
protocol BenchSubcommand: AsyncParsableCommand {
    var output: ReportOptions { get }
    func measure() async throws
}

extension BenchSubcommand {
    func run() async throws {
        try await BenchReport.run(command: Self.configuration.commandName ?? "", json: output.json) {
            try await measure()
        }
    }
}

/// Median of a sample.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The value at a percentile (0...100) of a sample, nearest rank.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[max(0, min(sorted.count - 1, rank))]
}

/// Seconds taken by `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    return seconds(since: start)
}

/// Seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func format(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

/// The machine's raw Ed25519 verification rate (swift-crypto), on `threads` threads at once.
func ed25519VerifyRate(threads: Int, count: Int = 20_000) async -> Double {
    let key = Curve25519.Signing.PrivateKey()
    let message = [UInt8](repeating: 0x5A, count: 300)
    let signature = try! key.signature(for: message)
    let publicKey = key.publicKey.rawRepresentation
    let perThread = count / threads
    let elapsed = await seconds {
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    let verifier = try! Curve25519.Signing.PublicKey(rawRepresentation: publicKey)
                    var valid = 0
                    for _ in 0..<perThread where verifier.isValidSignature(signature, for: message) { valid += 1 }
                    return valid
                }
            }
            var total = 0
            for await valid in group { total += valid }
            precondition(total == perThread * threads)
        }
    }
    return Double(perThread * threads) / elapsed
}
