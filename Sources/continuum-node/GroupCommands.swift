import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct GroupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Create groups and see who is in them. A node shares posts only with the members of its groups.",
        subcommands: [GroupCreateCommand.self, GroupListCommand.self, GroupMembersCommand.self],
        defaultSubcommand: GroupListCommand.self
    )
}

struct GroupCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Found a group: this node is its first member and admin. Invite others with 'invite'.",
        discussion: """
            Only members see the group's posts, comments and photos; a node of the LAN that is not a member is \
            refused before anything is sent. With --open, anyone who knows the group may join without an admin.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The group's name (1 to 64 bytes, one line).", valueName: "NAME"))
    var name: String

    @Flag(help: "Anyone who knows the group may join it without an admin's approval.")
    var open = false

    func validate() throws {
        if TextRules.isBlank(name) { throw ValidationError("the group name is blank; give one, such as Family") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let id: GroupID
        do {
            id = try await context.actions().createGroup(name: name, open: open, by: identity)
        } catch let error as RecordRefused {
            throw CLIError("the group name: \(error.message)")
        } catch let error as GroupNameTaken {
            throw CLIError(error.message)
        }
        let groups = try await context.store.groups()
        if output.json, let group = groups.first(where: { $0.id == id }) { return try Output.json(GroupJSON(group)) }
        print("created group \(name) (\(id.short)); invite members with 'continuum-node invite'")
    }
}

struct GroupListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the groups this node belongs to."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let context = try options.open()
        let groups = try await context.store.groups()
        if output.json { return try Output.json(["groups": groups.map(GroupJSON.init)]) }
        if groups.isEmpty {
            print(
                "this node belongs to no group, so it shares nothing: create one with 'continuum-node group create "
                    + "NAME', or join one with 'continuum-node join CODE'"
            )
            return
        }
        for group in groups {
            var traits = [plural(group.members, "member")]
            if group.admin { traits.append("admin") }
            if group.open { traits.append(group.network ? "network" : "open") }
            print("\(group.id.short)  \(group.name ?? "(name not here yet)")  \(traits.joined(separator: ", "))")
        }
    }
}

struct GroupMembersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "List a group's members (and those removed from it)."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("The group: its name or the start of its id (default: the only one).", valueName: "G"))
    var group: String?

    func run() async throws {
        let context = try options.open()
        let id = try await GroupChoice.resolve(group, in: context.store)
        let members = try await context.store.members(of: id)
        if output.json {
            return try Output.json(["members": members.map(MemberJSON.init)])
        }
        for member in members {
            var traits: [String] = []
            if member.admin { traits.append("admin") }
            if member.isMe { traits.append("this node") }
            if let through = member.removedThrough { traits.append("removed (its records up to \(through) kept)") }
            let name = member.name ?? "(no name)"
            let line = "\(member.log.short)  \(name)  node \(member.node.short)"
            print(traits.isEmpty ? line : "\(line)  \(traits.joined(separator: ", "))")
        }
    }
}

struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Make a one-time code that lets another node join a group (this node must be its admin).",
        discussion: """
            The new node runs 'continuum-node join CODE' while this node runs. The code names this node, where it \
            listens and a secret; it works once, until it expires. A joiner proves the secret inside its TLS \
            session with this node, so a code seen in transit cannot be replayed on another connection.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("The group: its name or the start of its id (default: the only one).", valueName: "G"))
    var group: String?

    @Option(help: "Minutes until the code expires.")
    var expires = 60

    @OptionGroup var address: CodeAddressOptions

    func validate() throws {
        guard (1...10_080).contains(expires) else { throw ValidationError("--expires must be 1 to 10080 minutes") }
    }

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let id = try await GroupChoice.resolve(group, in: context.store, adminOnly: group == nil)
        let ticket = try await context.actions().invite(to: id, lifetime: .seconds(expires * 60), by: identity)
        let (host, port) = address.resolved(context.directory)
        let code = ticket.code(of: identity, host: host, port: port)
        let name = try await context.store.groups().first { $0.id == id }?.name
        if output.json {
            return try Output.json(InviteJSON(code: code, group: id, groupName: name, expiresAt: ticket.expiresAt))
        }
        print(code.text)
        // The QR code holds the running web UI's page with #invite=CODE when one is known (a phone's camera opens
        // it, and the page says what the code is for; `join` takes it too), else the code. On stderr, so that the
        // code alone is what a script captures.
        let scanned =
            GuestLinkCommand.webAddress(in: context.directory).map { $0 + "#invite=" + code.text } ?? code.text
        if isatty(STDERR_FILENO) == 1, let qr = try? QRCode(encoding: scanned) {
            FileHandle.standardError.write(Data((qr.terminalText() + "\n").utf8))
        }
        FileHandle.standardError.write(
            Data(
                ("invite to \(name ?? id.short), once, until \(ticket.expiresAt.rfc3339); on the new node: "
                    + "continuum-node join \(code.text)\n").utf8
            )
        )
    }
}

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract:
            "Join a group with an invite code, by the name of an open group nearby, or ask a node to let this one in.",
        discussion: """
            Start the node first ('continuum-node run', in another terminal), then join. With an invite code the \
            inviter's node lets this node in at once. With the name of an open group that a node on the LAN \
            announces, this node joins it at once ('status' shows the open groups nearby). Otherwise, '--ask PEER' asks a node (one listed by \
            'continuum-node peers', or HOST:PORT): the request waits there until an admin approves it \
            ('continuum-node approve') or denies it, and this command waits with it.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(
        help: ArgumentHelp(
            "The code that 'continuum-node invite' printed, or the name of an open group announced nearby.",
            valueName: "CODE|NAME"
        )
    )
    var code: String?

    @Option(
        help: ArgumentHelp(
            "Ask this node to let this one join: the start of its id or its name (from 'peers'), or HOST:PORT.",
            valueName: "PEER"
        )
    )
    var ask: String?

    @Option(help: "With --ask: minutes to wait for an admin's answer (the request stays there after).")
    var wait = 10

    func validate() throws {
        guard (code == nil) != (ask == nil) else {
            throw ValidationError("give an invite code, or --ask PEER to ask a node to let this one in (not both)")
        }
        guard (1...1_440).contains(wait) else { throw ValidationError("--wait must be 1 to 1440 minutes") }
    }

    func run() async throws {
        let request: ControlRequest
        let context = try options.open()
        if let code = code.map(InviteCode.pasted) {
            do {
                _ = try InviteCode(parsing: code)
                request = .join(code: code)
            } catch {
                // Not a code: the name of an open group announced on the LAN, unless it looks like a mistyped code.
                if InviteCode.looksLikeCode(code) { throw CLIError(error.description) }
                request = .joinOpen(name: code)
            }
        } else {
            let address = try await Self.address(of: ask ?? "", in: context.store)
            request = .ask(host: address.host, port: address.port, node: address.node, waitSeconds: wait * 60)
        }
        try context.store.close()
        let connection = try ControlClient(context.directory)
        try connection.send(request)
        while let reply = try connection.reply() {
            switch reply {
            case .joined(let group):
                if output.json { return try Output.json(["group": group.hex]) }
                print("joined group \(group.short); its posts arrive by sync ('continuum-node feed')")
                return
            case .pending(let message):
                FileHandle.standardError.write(Data("waiting for an admin: \(message)\n".utf8))
            case .failed(let message):
                throw CLIError("could not join: \(message)")
            default:
                continue
            }
        }
        throw CLIError("the node closed the control connection before the other node answered")
    }

    /// HOST:PORT as given, or a remembered peer's address by the start of its id (its key is then required of the
    /// connection). Not by name: a peer's name is its own choice, and anyone can take another's.
    static func address(
        of text: String,
        in store: ContinuumStore
    ) async throws
        -> (host: String, port: Int, node: AuthorID?)
    {
        if let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) {
            guard (1...65535).contains(port), colon > text.startIndex else {
                throw CLIError("'\(text)' is not HOST:PORT with a port of 1 to 65535")
            }
            return (String(text[..<colon]), port, nil)
        }
        let peers = try await store.peers().filter { $0.port > 0 }
        do {
            let peer = try IDLookup.resolve(text, among: peers.map { IDCandidate($0, ids: [$0.id]) })
            return (peer.host, peer.port, peer.id)
        } catch {
            switch error {
            case .notAnID where text.isEmpty:
                throw CLIError("\(error); give the start of a peer's id, or HOST:PORT")
            case .notAnID, .notFound:
                throw CLIError(
                    "no peer this node has met has an id starting with '\(text)' (see 'continuum-node peers'); "
                        + "give the start of its id, or HOST:PORT"
                )
            case .ambiguous(_, let matches):
                throw CLIError("'\(text)' matches \(matches.count) peers; give more of the id")
            }
        }
    }
}

struct RevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Remove a member from a group (admins only).",
        discussion: """
            Every member's node stops syncing the group with the removed node and refuses its new records there, \
            as soon as it has the removal (within one round). What the removed node already received, it keeps: \
            nobody can take back what was sent.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(help: ArgumentHelp("The member: its name, or the start of its log key or node id.", valueName: "MEMBER"))
    var member: String

    @Option(help: ArgumentHelp("The group: its name or the start of its id (default: the only one).", valueName: "G"))
    var group: String?

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let id = try await GroupChoice.resolve(group, in: context.store, adminOnly: group == nil)
        let all = try await context.store.members(of: id).filter { $0.removedThrough == nil }
            .map { IDCandidate($0, ids: [$0.log, $0.node], name: $0.name) }
        if all.contains(where: { $0.value.isMe && $0.isNamed(by: member) }) {
            throw CLIError("'\(member)' is this node; a node does not remove itself")
        }
        let target: MemberSummary
        do {
            target = try IDLookup.resolve(member, among: all.filter { !$0.value.isMe })
        } catch {
            switch error {
            case .notAnID where member.isEmpty:
                throw CLIError(error.description)
            case .notAnID, .notFound:
                throw CLIError(
                    "no member of this group is called or starts with '\(member)' (see 'continuum-node group members')"
                )
            case .ambiguous(_, let matches):
                throw CLIError("'\(member)' matches \(matches.count) members; give more of the log key")
            }
        }
        let record = try await context.actions().revoke(target.log, by: identity)
        if output.json {
            return try Output.json(RevokedJSON(group: id, member: target, record: record))
        }
        print(
            "removed \(target.name ?? target.log.short) from the group. Members' nodes now refuse its new records "
                + "and stop syncing the group with it. It keeps what it already received."
        )
    }
}
