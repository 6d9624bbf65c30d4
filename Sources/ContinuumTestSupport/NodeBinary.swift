import Foundation

/// The built `continuum-node` executable, for tests that run it as a real process: where it is, where the test
/// images are, and running a command to completion.
public enum NodeBinary {
    /// The package's root directory (this file is `Sources/ContinuumTestSupport/NodeBinary.swift`).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// `Tests/Fixtures`: the sample images.
    public static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures")

    /// `$CONTINUUM_NODE_BIN`, else the debug build.
    public static var url: URL {
        if let path = ProcessInfo.processInfo.environment["CONTINUUM_NODE_BIN"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent(".build/debug/continuum-node")
    }

    /// What a finished command printed, and its exit status.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `continuum-node ARGUMENTS` to completion, without `$CONTINUUM_DATA` (tests pass `--data`).
    public static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "CONTINUUM_DATA")
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }
}
