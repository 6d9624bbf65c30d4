import ArgumentParser
import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation
import Logging

/// Options every command takes.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The data directory.", valueName: "DIR"))
    var data: String?

    @Option(name: .long, help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .warning

    /// Opens the data directory and the store. Only the executable sets up logging, here.
    func open() throws -> CommandContext {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let directory = DataDirectory.resolve(explicit: data, environment: ProcessInfo.processInfo.environment)
        let logger = Logger(label: "continuum")
        // A delete's WAL truncation that a reader (the running node's) held up would be retried by this process
        // only until it exits: the running node takes it over. With no node running, the reader is another
        // command, and SQLite removes the WAL when the last connection closes.
        let store = try ContinuumStore.open(directory, logger: logger).handingUnfinishedErasures {
            ControlClient.tell(directory, .truncateWAL)
        }
        return CommandContext(directory: directory, store: store)
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Options of commands that can print JSON.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print JSON (fields are documented in CLI.md).")
    var json = false
}

/// What a command works on: the data directory and its store.
struct CommandContext {
    let directory: DataDirectory
    let store: ContinuumStore

    /// The changes a person makes, on this store; the node running on this directory, if any, is told of each
    /// (so that it sends new records to its peers now rather than at its next look, within 50 ms).
    func actions() -> NodeActions {
        let thumbnails = ThumbnailService(store: store, logger: Logger(label: "continuum"))
        return NodeActions(
            store: store,
            engine: RunningNodeNotifier(directory),
            inspector: MediaInspector(thumbnails: thumbnails),
            thumbnails: thumbnails,
            thumbnailing: .beforeReturning
        )
    }

    /// This node's identity, for a command that signs: one on a directory with no identity yet is refused, with
    /// the command that makes one (`init`), before anything is written.
    func identity() throws -> NodeIdentity {
        guard let identity = try existingIdentity() else {
            throw CLIError(
                "this node has no identity yet (no \(directory.identityURL.lastPathComponent) in "
                    + "\(directory.path)): run 'continuum-node init --name NAME' first"
            )
        }
        return identity
    }

    /// This node's identity, or nil where the data directory has none yet (reads work without one). A key that is
    /// there but unsafe or corrupt is an error.
    func existingIdentity() throws -> NodeIdentity? {
        guard FileManager.default.fileExists(atPath: directory.identityURL.path) else { return nil }
        return try IdentityFile.load(at: directory.identityURL)
    }

    /// This node's id, to mark its own reactions in what a read shows; nil without an identity. Reads work whatever
    /// state the key file is in (`BadInputTests`): one that cannot be read only leaves that mark out.
    func viewer() -> AuthorID? {
        // Dropped on purpose: the error is the writes' to report (``identity()``), with the fix.
        (try? existingIdentity())?.author
    }

    /// This node's identity for `run`: made now, and said so on stderr, when the data directory has none yet.
    func identityMadeIfNeeded() throws -> NodeIdentity {
        let (identity, created) = try IdentityFile.loadOrCreate(at: directory.identityURL)
        if created {
            FileHandle.standardError.write(
                Data(
                    ("made a new identity for this node in \(directory.path), with no name: set one with "
                        + "'continuum-node init --name NAME'\n").utf8
                )
            )
        }
        return identity
    }
}

/// Printing for people and for programs.
enum Output {
    /// Pretty-printed, keys sorted (Docs/CLI.md, "JSON output").
    static func json(_ value: some Encodable) throws {
        print(String(decoding: try JSONEncoder.frontEnd(pretty: true).encode(value), as: UTF8.self))
    }

    static func author(_ id: AuthorID, _ name: String?) -> String {
        name.map { "\($0) (\(id.short))" } ?? id.short
    }

    static func post(_ post: PostSummary) -> String {
        let comments = post.commentCount == 1 ? "1 comment" : "\(post.commentCount) comments"
        var lines = [
            "\(post.id.short)  \(post.createdAt.rfc3339)  \(author(post.author, post.authorName))  \(comments)"
        ]
        lines += post.caption.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
        if let reactions = reactions(post.reactions) { lines.append("    " + reactions) }
        if !post.photo.available { lines.append("    (photo not here yet)") }
        return lines.joined(separator: "\n")
    }

    /// "❤️ 2  😂 1 (yours: ❤️)", or nil when nobody reacted.
    static func reactions(_ counts: ReactionCounts) -> String? {
        guard counts.total > 0 else { return nil }
        let given = counts.counts.map { "\($0.emoji.symbol) \($0.count)" }.joined(separator: "  ")
        return given + (counts.mine.map { " (yours: \($0.symbol))" } ?? "")
    }
}

/// "1 post", "2 posts".
func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

/// Parsing of the value types commands take.
enum Parse {
    /// `LAT,LON` in decimal degrees.
    static func coordinate(_ text: String, option: String) throws -> Coordinate {
        guard let coordinate = Coordinate(parsing: text) else {
            throw ValidationError(
                "\(option) '\(text)' is not LAT,LON in decimal degrees (latitude -90...90, longitude -180...180)"
            )
        }
        return coordinate
    }

    /// `5d`, `12h`, `2w`, `30m` ago, or a date `2024-07-14`, or an RFC 3339 time.
    static func since(_ text: String, now: Date = Date()) throws -> Timestamp {
        if let since = Timestamp(since: text, now: now) { return since }
        throw ValidationError(
            "--since '\(text)' is not a duration (30m, 12h, 5d, 2w) or a date (2024-07-14 or 2024-07-14T16:20:00Z)"
        )
    }
}
