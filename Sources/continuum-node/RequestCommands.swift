import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation

struct RequestsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requests",
        abstract: "List the nodes that asked to join ('join --ask') and wait for an admin of this node.",
        discussion: """
            A name in a request is the one the asking node gave itself: check with its owner before approving. \
            This node keeps at most 100 requests; the waiting ones asked least recently go first.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Flag(help: "Also list the requests that were denied.")
    var all = false

    func run() async throws {
        let context = try options.open()
        let requests = try await context.store.joinRequests(includingDenied: all)
        if output.json { return try Output.json(["requests": requests.map(JoinRequestJSON.init)]) }
        if requests.isEmpty {
            print(all ? "no node has asked to join" : "no node waits to join")
            return
        }
        for request in requests {
            let state = request.deniedAt.map { "denied \($0.rfc3339)" } ?? "waiting"
            print(
                "\(request.node.short)  \(request.name ?? "(no name)")  from \(request.host)  "
                    + "asked \(request.askedAt.rfc3339)  \(state)"
            )
        }
        if requests.contains(where: { $0.deniedAt == nil }) {
            print("approve one with 'continuum-node approve ID', or deny it with 'continuum-node deny ID'")
        }
    }

    /// The request whose node id starts with `text`. Not by name: a name in a request is the asker's own choice,
    /// and anyone can ask under another's name (or under another's id as a name).
    static func find(_ text: String, in store: ContinuumStore) async throws -> JoinRequest {
        let requests = try await store.joinRequests(includingDenied: true)
        do {
            return try IDLookup.resolve(text, among: requests.map { IDCandidate($0, ids: [$0.node]) })
        } catch {
            switch error {
            case .notAnID where text.isEmpty:
                throw CLIError(error.description)
            case .notAnID, .notFound:
                throw CLIError(
                    "no request to join is from a node whose id starts with '\(text)' (see "
                        + "'continuum-node requests --all')"
                )
            case .ambiguous(_, let matches):
                throw CLIError("'\(text)' matches \(matches.count) requests; give more of the node id")
            }
        }
    }
}

struct ApproveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Let a node that asked to join into a group (admins only); it receives the group's history.",
        discussion: "The node learns it the next time it asks (every few seconds while 'join --ask' waits)."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The node: the start of its id, from 'requests'.", valueName: "ID"))
    var node: String

    @Option(help: ArgumentHelp("The group: its name or the start of its id (default: the only one).", valueName: "G"))
    var group: String?

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let request = try await RequestsCommand.find(node, in: context.store)
        let id = try await GroupChoice.resolve(group, in: context.store, adminOnly: group == nil)
        let record = try await context.actions().approve(request.node, into: id, by: identity)
        if output.json { return try Output.json(ApprovedJSON(group: id, node: request.node, record: record)) }
        print(
            "approved node \(request.node.short) (\(request.name ?? "no name")) into the group; it joins the next "
                + "time it asks"
        )
    }
}

struct DenyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deny",
        abstract: "Refuse a node's request to join; it is told so the next time it asks.",
        discussion: "A denied request stays listed by 'requests --all', and can still be approved."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The node: the start of its id, from 'requests'.", valueName: "ID"))
    var node: String

    func run() async throws {
        let context = try options.open()
        let request = try await RequestsCommand.find(node, in: context.store)
        try await context.actions().deny(request.node)
        if output.json { return try Output.json(DeniedJSON(node: request.node)) }
        print("denied the request to join of node \(request.node.short) (\(request.name ?? "no name"))")
    }
}
