import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import GRDB
import Testing

/// Runs the built `continuum-node` binary against a temporary data directory.
struct CLI {
    static let fixtures = NodeBinary.fixtures
    typealias Result = NodeBinary.Result

    let data: URL

    init() {
        data = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-cli-\(UUID().uuidString)")
    }

    func remove() { try? FileManager.default.removeItem(at: data) }

    func fixture(_ name: String) -> String { Self.fixtures.appendingPathComponent(name).path }

    @discardableResult
    func run(_ arguments: String...) async throws -> Result { try await run(arguments) }

    func run(_ arguments: [String]) async throws -> Result {
        try await NodeBinary.run(arguments + ["--data", data.path])
    }

    /// Runs a command that must succeed, and returns its trimmed stdout.
    @discardableResult
    func ok(_ arguments: String...) async throws -> String {
        let result = try await run(arguments)
        #expect(result.status == 0, "\(arguments) failed: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Everything the data directory holds, read without running the binary: every row of every table of the store
    /// (the search index's own tables among them), sorted, and every photo and thumbnail file with its size and
    /// hash. A refused command must leave all of it as it was. (Read straight from the files: two CLI runs per
    /// post, as this was before, made the bad-input suite the slowest of all.)
    func snapshot() throws -> String {
        var parts: [String] = []
        let database = try DatabaseQueue(path: DataDirectory(url: data).databaseURL.path)
        defer { try? database.close() }
        try database.read { db in
            let tables = try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            for table in tables {
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM \"\(table)\"").map(\.description).sorted()
                parts.append("\(table) (\(rows.count)):\n" + rows.joined(separator: "\n"))
            }
        }
        let photos = data.appendingPathComponent("photos")
        let files = (FileManager.default.enumerator(atPath: photos.path)?.allObjects as? [String] ?? []).sorted()
        for file in files {
            let contents = FileManager.default.contents(atPath: photos.appendingPathComponent(file).path) ?? Data()
            parts.append("\(file) \(contents.count) \(AssetHash.of(contents).hex)")
        }
        return parts.joined(separator: "\n")
    }

    func feedIDs() async throws -> [String] {
        let json = try await run("feed", "--json", "--limit", "500").json()
        return (json["posts"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }
}

extension NodeBinary.Result {
    /// Stdout as a JSON object.
    func json() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "stdout: \(stdout)")
    }
}
