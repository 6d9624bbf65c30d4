import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `follow` and `unfollow` print with `--json`.
struct FollowResult: Encodable {
    let post: PostID
    let following: Bool
    /// False when nothing changed (following twice is following once).
    let changed: Bool
}

struct FollowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Follow a post: its new comments, and its edit or deletion, are pushed here and notify you.",
        discussion: "Following a post twice is the same as once. Follows survive restarts."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or the start of it.", valueName: "POST"))
    var post: String

    func run() async throws {
        let context = try options.open()
        let id = try await context.store.resolvePost(post)
        let changed = try await context.actions().follow(id)
        if output.json { return try Output.json(FollowResult(post: id, following: true, changed: changed)) }
        print(changed ? "following \(id.short)" : "already following \(id.short)")
    }
}

struct UnfollowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unfollow",
        abstract: "Stop following a post: no more pushes or notifications for it."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The post's id, or the start of it.", valueName: "POST"))
    var post: String

    func run() async throws {
        let context = try options.open()
        let id: PostID
        do {
            id = try await context.store.resolveFollowed(post)
        } catch let error as StoreError where error.code == .notFound {
            // Not followed: say so about the post if there is one, else report the unknown id.
            id = try await context.store.resolvePost(post)
        }
        let changed = try await context.actions().unfollow(id)
        if output.json { return try Output.json(FollowResult(post: id, following: false, changed: changed)) }
        print(changed ? "no longer following \(id.short)" : "was not following \(id.short)")
    }
}

struct FollowingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "following",
        abstract: "The posts you follow, most recently followed first, with their unread notifications."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let context = try options.open()
        let followed = try await context.store.following()
        if output.json { return try Output.json(["following": followed.map(FollowedPostJSON.init)]) }
        if followed.isEmpty {
            print("You follow no posts. Follow one with 'continuum-node follow POST'.")
            return
        }
        for entry in followed {
            let unread = entry.unread == 0 ? "" : "  \(entry.unread) unread"
            if let summary = entry.summary {
                let caption = summary.caption.split(separator: "\n").first.map(String.init) ?? ""
                print(
                    "\(entry.post.short)  \(Output.author(summary.author, summary.authorName))  "
                        + "\(plural(summary.commentCount, "comment"))\(unread)\n    \(caption)"
                )
            } else {
                print("\(entry.post.short)  (deleted by its author)\(unread)")
            }
        }
    }
}

struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Your notifications, newest first: comments on posts you follow, their edits and deletions.",
        discussion: """
            Mark some read with 'notifications --mark-read 3 7', or all of them with 'notifications --mark-read --all'.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Only the unread ones.")
    var unread = false

    @Option(help: "At most this many (1 to 1000).")
    var limit = 50

    @Flag(name: .customLong("mark-read"), help: "Mark the notifications numbered ID... (or --all) read.")
    var markRead = false

    @Flag(help: "With --mark-read: every notification.")
    var all = false

    @Argument(help: ArgumentHelp("With --mark-read: the numbers of the notifications.", valueName: "ID"))
    var ids: [String] = []

    func validate() throws {
        guard (1...1000).contains(limit) else { throw ValidationError("--limit must be 1 to 1000") }
        if !markRead {
            guard ids.isEmpty else {
                throw ValidationError("notification numbers are only taken with --mark-read: --mark-read \(ids[0])")
            }
            guard !all else { throw ValidationError("--all goes with --mark-read: --mark-read --all") }
            return
        }
        guard ids.isEmpty != !all else {
            throw ValidationError(
                all
                    ? "give either notification numbers or --all, not both"
                    : "--mark-read needs the numbers of the notifications (see 'notifications'), or --all"
            )
        }
        for id in ids where Int64(id).map({ $0 > 0 }) != true {
            throw ValidationError("'\(id)' is not a notification number (a whole number from 'notifications')")
        }
    }

    func run() async throws {
        let context = try options.open()
        if markRead {
            let marks = try await context.actions().markRead(all ? .all : .numbered(ids.compactMap { Int64($0) }))
            if output.json { return try Output.json(ReadMarksJSON(marks)) }
            print("marked \(marks.marked) read; \(marks.unread) unread")
            return
        }
        let list = try await context.store.notifications(unreadOnly: unread, limit: limit)
        if output.json { return try Output.json(["notifications": list.map(NotificationJSON.init)]) }
        if list.isEmpty {
            print(unread ? "No unread notifications." : "No notifications. Follow a post to hear of its comments.")
            return
        }
        for notification in list {
            let mark = notification.read ? " " : "*"
            print(
                "\(mark) \(notification.id)  \(notification.createdAt.rfc3339)  "
                    + WatchEvent(.notification(notification)).summary
            )
        }
    }
}

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow what the running node does, one event per line, until Ctrl-C.",
        discussion: """
            Events: new post, new comment, edit, deletion, notification, photo arrived or skipped, peer joined or \
            left, sync progress and end, fork. With --json each line is one JSON object (CLI.md).
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Also raise a desktop notification for each notification, through notify-send.")
    var desktop = false

    @Flag(help: "Also show photo transfer progress (many lines per photo).")
    var progress = false

    func run() async throws {
        let context = try options.open()
        try context.store.close()
        let connection = try ControlClient(context.directory)
        var notifier: String?
        if desktop {
            notifier = Self.findExecutable("notify-send")
            if notifier == nil {
                FileHandle.standardError.write(
                    Data(
                        "watch: no desktop notifications: notify-send was not found on PATH (Debian: apt install libnotify-bin); notifications are printed here only\n"
                            .utf8
                    )
                )
            }
        }
        try connection.send(.watch)
        guard case .watching(let node, let at) = try connection.reply() else {
            throw CLIError("the node stopped")
        }
        let watching = WatchEvent.Watching(node: node, at: at)
        if output.json {
            write(String(decoding: try JSONEncoder.frontEnd().encode(watching), as: UTF8.self))
        } else {
            write("\(at.rfc3339.dropFirst(11).prefix(8))  \(watching.summary)")
        }
        while let line = try connection.readLine() {
            // A line this version cannot read (from a newer node) is skipped, as an unknown type would be.
            guard let event = try? JSONDecoder().decode(WatchEvent.Line.self, from: Data(line.utf8)) else { continue }
            if event.type == "photoProgress" && !progress { continue }
            write(output.json ? line : "\(event.at.dropFirst(11).prefix(8))  \(event.summary)")
            if event.type == "notification", let notifier {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: notifier)
                process.arguments = ["--app-name=continuum-node", "continuum-node", event.summary]
                try? process.run()
            }
        }
        throw CLIError("the node stopped")
    }

    /// One line, unbuffered: each event is seen as it happens, also through a pipe.
    private func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
