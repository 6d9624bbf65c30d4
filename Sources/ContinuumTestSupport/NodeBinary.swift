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

    /// The debug build's `continuum-bench`, beside ``url``'s `continuum-node` (the bench starts that one).
    public static var benchURL: URL {
        url.deletingLastPathComponent().appendingPathComponent("continuum-bench")
    }

    /// What a finished command printed, and its exit status.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `continuum-node ARGUMENTS` (or `executable`'s) to completion, without `$CONTINUUM_DATA` (tests pass
    /// `--data`).
    ///
    /// The process is waited for on a thread of its own, never on the cooperative pool: on two cores the pool has two
    /// threads, and a test that blocked one in `waitUntilExit` stalled every other suite (raw clients missed the
    /// node's handshake limit, polls went unscheduled). Its output is read while it runs, both pipes at once, so a
    /// command that writes much to stderr cannot block on a full pipe.
    public static func run(_ arguments: [String], executable: URL? = nil) async throws -> Result {
        let executable = executable ?? url
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try runBlocking(arguments, executable) })
            }
        }
    }

    /// `run`'s work, on the calling thread, which it blocks until the process has exited.
    private static func runBlocking(_ arguments: [String], _ executable: URL) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "CONTINUUM_DATA")
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stderr = PipeReader(err.fileHandleForReading)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr.wait(), as: UTF8.self)
        )
    }
}

/// Reads a pipe to its end on a thread of its own; `wait()` returns what it read.
private final class PipeReader: @unchecked Sendable {
    // @unchecked: `data` is written once by the reading thread before it signals `done`, and read only after `wait()`
    // has taken that signal, so the semaphore orders every access.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread {
            self.data = handle.readDataToEndOfFile()
            self.done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
