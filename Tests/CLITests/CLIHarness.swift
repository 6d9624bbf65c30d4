import ContinuumTestSupport
import Foundation
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
    func run(_ arguments: String...) throws -> Result { try run(arguments) }

    func run(_ arguments: [String]) throws -> Result { try NodeBinary.run(arguments + ["--data", data.path]) }

    /// Runs a command that must succeed, and returns its trimmed stdout.
    @discardableResult
    func ok(_ arguments: String...) throws -> String {
        let result = try run(arguments)
        #expect(result.status == 0, "\(arguments) failed: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Everything a person could observe of the store: every post with its comments, the counts, the photo files.
    func snapshot() throws -> String {
        var parts = [try run("feed", "--json", "--limit", "500").stdout]
        // The store's part of the status (not the identity, which some tests break on purpose).
        let status = try run("status", "--json").json()
        for key in ["store", "forks"] {
            let value = try #require(status[key], "status has \(key)")
            parts.append(
                String(decoding: try JSONSerialization.data(withJSONObject: value, options: .sortedKeys), as: UTF8.self)
            )
        }
        for id in try feedIDs() { parts.append(try run("show", id, "--json").stdout) }
        parts.append(try run("following", "--json").stdout)
        parts.append(try run("notifications", "--json").stdout)
        let photos = data.appendingPathComponent("photos")
        let files = (FileManager.default.enumerator(atPath: photos.path)?.allObjects as? [String] ?? []).sorted()
        parts.append(files.joined(separator: ","))
        return parts.joined(separator: "\n")
    }

    func feedIDs() throws -> [String] {
        let json = try run("feed", "--json", "--limit", "500").json()
        return (json["posts"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }
}

extension NodeBinary.Result {
    /// Stdout as a JSON object.
    func json() throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], "stdout: \(stdout)")
    }
}
