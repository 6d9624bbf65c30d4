import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation

/// The author a person names: the start of its id, or its display name.
enum AuthorChoice {
    static func resolve(_ text: String, in store: ContinuumStore, me: NodeID) async throws -> AuthorID {
        var named: [AuthorID] = []
        for author in try await store.authors(named: text) {
            if try await store.isOwn(author, node: me) { throw CLIError("'\(text)' is this node") }
            named.append(author)
        }
        // One person with a log in each of several groups: any of its logs names its node.
        var nodes: Set<NodeID?> = []
        for author in named { nodes.insert(try await store.node(ofLog: author)) }
        if named.count == 1 || (named.count > 1 && nodes.count == 1 && nodes.first! != nil) { return named[0] }
        if named.count > 1 {
            throw CLIError(
                "\(named.count) authors are called '\(text)': give the start of the id instead ("
                    + named.map(\.short).joined(separator: ", ") + ")"
            )
        }
        do {
            return try await store.resolveAuthor(text)
        } catch let error as StoreError {
            throw CLIError("no author is called '\(text)', and \(error.message)")
        }
    }
}

struct BlockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "block",
        abstract: "Block an author on this node: its posts and comments are erased here, and never shown again.",
        discussion: """
            Blocking is local: nobody is told. The author's posts, comments and edits, their photos and the \
            notifications they made are erased from this node, as a deletion would erase them, and what it writes \
            later is kept as headers alone: never shown, never forwarded, never notified. When an admin's record \
            names the author's node, every log of that node is blocked, in every group. 'unblock' shows what it writes from then on; what was erased stays erased.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The author: its name, or the start of its id.", valueName: "AUTHOR"))
    var author: String

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let id: AuthorID
        do {
            id = try await AuthorChoice.resolve(author, in: context.store, me: identity.node)
        } catch let error as CLIError where error.description.hasSuffix("is this node") {
            throw CLIError("\(error.description); a node does not block itself")
        }
        let erased = try await context.actions().block(id, by: identity)
        if output.json {
            return try Output.json(
                BlockJSON(author: id, blocked: true, erasedPosts: erased.posts, erasedComments: erased.comments)
            )
        }
        print(
            "blocked \(author) (\(id.short)): erased \(plural(erased.posts, "post")) and "
                + "\(plural(erased.comments, "comment")) here; nothing it writes is shown or forwarded by this node"
        )
    }
}

struct UnblockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unblock",
        abstract: "Unblock an author: what it writes from now on is shown again (what was erased stays erased)."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The author: its name, or the start of its id.", valueName: "AUTHOR"))
    var author: String

    func run() async throws {
        let context = try options.open()
        let blocked = try await context.store.blockedAuthors().map { blocked in
            IDCandidate(blocked, ids: [blocked.author] + (blocked.node.map { [$0] } ?? []), name: blocked.name)
        }
        let match: BlockedAuthor
        do {
            match = try IDLookup.resolve(author, among: blocked)
        } catch {
            switch error {
            case .notAnID where author.isEmpty:
                throw CLIError(error.description)
            case .notAnID, .notFound:
                throw CLIError(
                    "no blocked author is called or starts with '\(author)' (see 'continuum-node blocked')"
                )
            case .ambiguous(_, let matches):
                throw CLIError("'\(author)' matches \(matches.count) blocked authors; give more of the id")
            }
        }
        try await context.store.unblock(match.author)
        if output.json {
            return try Output.json(BlockJSON(author: match.author, blocked: false))
        }
        print("unblocked \(match.name ?? match.author.short); what it writes from now on is shown")
    }
}

struct BlockedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blocked",
        abstract: "List the authors this node blocked."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let context = try options.open()
        let blocked = try await context.store.blockedAuthors()
        if output.json {
            return try Output.json([
                "blocked": blocked.map(BlockedJSON.init)
            ])
        }
        if blocked.isEmpty { return print("this node blocks nobody") }
        for entry in blocked {
            print("\(entry.author.short)  \(entry.name ?? "(no name)")  blocked \(entry.blockedAt.rfc3339)")
        }
    }
}

struct HideCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hide",
        abstract: "Hide someone's comment on your post: its text is erased on every member's node.",
        discussion: """
            The post's author signs a delete of the comment, which every node of the group honours as it honours \
            the comment's author's own delete. Nodes that already showed the comment keep nothing of its text once \
            they have the hide; as with any deletion, nobody can take back what was already read.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The comment: its id or a unique prefix.", valueName: "COMMENT"))
    var comment: String

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        guard case .comment(let id, _) = try await context.store.resolveTarget(comment) else {
            throw CLIError("'\(comment)' is a post; hide is for comments on your posts (delete your own with 'delete')")
        }
        let record = try await context.actions().hide(id, by: identity)
        if output.json { return try Output.json(["hidden": id.hex, "record": record.hex]) }
        print("hid comment \(id.short): its text is erased on every member's node as the hide reaches it")
    }
}
