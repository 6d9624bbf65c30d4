import ContinuumTestSupport
import Foundation
import Testing

/// `continuum-bench --json` (Docs/BENCHMARKS.md): one JSON object on stdout with the figures by the names the doc
/// lists, the lines a person reads on stderr, and no object at all when the run fails. Every subcommand reports
/// through the same `BenchReport`; `api` is the one cheap enough for a debug build (`push` and `store` measure
/// Ed25519 rates, which take half a minute there).
@Suite struct BenchJSONTests {
    @Test("api --json: each figure by its documented name, the lines on stderr; bad input: no object")
    func apiReport() async throws {
        let run = try await NodeBinary.run(
            ["api", "--posts", "10", "--requests", "5", "--upload-mb", "1", "--runs", "1", "--json"],
            executable: NodeBinary.benchURL
        )
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
            "stdout is not one JSON object: \(run.stdout)"
        )
        #expect(object["command"] as? String == "api")
        let machine = try #require(object["machine"] as? [String: Any])
        #expect((machine["cores"] as? Int ?? 0) >= 1)
        let figures = try #require(object["figures"] as? [String: Double])
        let names = [
            "baseline.loopbackRoundTripMicroseconds", "baseline.loopbackMBPerSecond", "status.medianMs",
            "feed.medianMs", "upload.MBPerSecond", "upload.toLoopback",
        ]
        #expect(Set(figures.keys) == Set(names))
        for name in names {
            let value = try #require(figures[name])
            #expect(value > 0 && value.isFinite, "\(name) = \(value)")
        }
        // A ratio is its two figures', measured in the same run.
        let ratio = figures["upload.MBPerSecond"]! / figures["baseline.loopbackMBPerSecond"]!
        #expect(abs(figures["upload.toLoopback"]! - ratio) <= 0.001 * ratio)
        // The lines a person reads went to stderr; stdout held the object alone.
        #expect(run.stderr.contains("upload of 1 MiB through POST /api/posts"))

        let refused = try await NodeBinary.run(["api", "--runs", "many", "--json"], executable: NodeBinary.benchURL)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("many"))
        #expect(refused.stdout.isEmpty)
    }

    @Test("sync with no photos is refused before it starts: (c) and (d) measure a photo transfer")
    func syncWithoutPhotos() async throws {
        let run = try await NodeBinary.run(["sync", "--photos", "0", "--json"], executable: NodeBinary.benchURL)
        #expect(run.status == 64)
        #expect(run.stderr.contains("--photos must be at least 1"), "\(run.stderr)")
        #expect(!run.stderr.contains("baseline"), "nothing was measured")
        #expect(run.stdout.isEmpty)
    }
}
