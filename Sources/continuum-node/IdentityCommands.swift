import ArgumentParser
import ContinuumCore
import ContinuumDiscovery
import ContinuumNode
import ContinuumStore
import Foundation

struct InitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create this node's identity (if needed) and set its display name."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Option(help: "The display name peers see (1 to 64 bytes of UTF-8, one line).")
    var name: String?

    @Option(
        help: ArgumentHelp(
            "Join the network group of this name: every node given the same name shares with the others.",
            valueName: "NAME"
        )
    )
    var network: String?

    @Option(
        name: .customLong("network-key"),
        help: ArgumentHelp("Join the network group of the key in this file (see CLI.md).", valueName: "FILE")
    )
    var networkKey: String?

    @Flag(
        name: .customLong("no-recovery"),
        help: "Found the account without a recovery code (a lost or stolen device may then lock the account for good)."
    )
    var noRecovery = false

    @Option(
        help: ArgumentHelp(
            "Link this new device into your account with the code 'continuum-node device link' printed on one of your devices.",
            valueName: "CODE"
        )
    )
    var link: String?

    func validate() throws {
        if link != nil, noRecovery || network != nil || networkKey != nil {
            throw ValidationError(
                "--link joins an account that exists: --no-recovery, --network and --network-key do not apply"
            )
        }
        if let name, TextRules.isBlank(name) { throw ValidationError("--name is blank; give a display name") }
        if network != nil && networkKey != nil {
            throw ValidationError("--network and --network-key both name the network; give only one of them")
        }
        if let network, TextRules.isBlank(network) {
            throw ValidationError("--network is blank; give a network name, or leave it out")
        }
    }

    struct Result: Encodable {
        let id: AuthorID
        /// The person's account: founded by this node, or the one it joined; null for a node whose key signed records
        /// before accounts existed.
        @Nullable var account: AccountID?
        /// The recovery code's 12 words, only when the account was founded now with one; shown nowhere else.
        @Nullable var recoveryCode: String?
        @Nullable var name: String?
        let created: Bool
        let dataDirectory: String
    }

    func run() async throws {
        let networkID = try NetworkChoice.id(network: network, key: networkKey)
        let context = try options.open()
        let (identity, created) = try IdentityFile.loadOrCreate(at: context.directory.identityURL)
        if let link { return try await LinkRun(code: link, name: name, json: output.json).run(context, identity) }
        let recovery = noRecovery ? nil : RecoveryCode.random()
        let founding = try await context.store.foundAccount(by: identity, recovery: recovery?.key.author)
        let founded = founding?.founded ?? false
        var current = try await context.store.displayName(of: identity.author)
        if let name, name != current {
            try await context.actions().setName(name, by: identity)
            current = name
        }
        if let networkID {
            let label = NetworkChoice.label(network: network, id: networkID)
            if try await context.store.joinNetwork(
                GroupID(unchecked: Data(networkID.bytes)),
                name: label,
                by: identity
            ),
                !output.json
            {
                print("joined network group \(label)")
            }
        }
        let result = Result(
            id: identity.author,
            account: founding?.account,
            recoveryCode: founded ? recovery?.words.joined(separator: " ") : nil,
            name: current,
            created: created,
            dataDirectory: context.directory.path
        )
        if output.json { return try Output.json(result) }
        print(created ? "Created a new identity." : "Identity already exists.")
        print("node id: \(identity.author.hex)")
        print(
            "account: \(founding.map(\.account.hex) ?? "none (this node's key signed records before accounts existed)")"
        )
        print("name:    \(current ?? "(none; set one with --name)")")
        print("data:    \(context.directory.path)")
        if founded { Self.printRecovery(result.recoveryCode) }
        if try await context.store.groups().isEmpty {
            print(
                "This node shares nothing until it is in a group: create one with 'continuum-node group create "
                    + "NAME', or join one with 'continuum-node join CODE' (an invite from a member's node), "
                    + "'continuum-node join NAME' (an open group announced nearby) or 'continuum-node join --ask PEER'."
            )
        }
    }
}

extension InitCommand {
    /// What `init` says of the recovery code of an account it founded: the words and their QR code, or the price of
    /// having none.
    static func printRecovery(_ words: String?) {
        guard let words else {
            print(
                "No recovery code: if this device is lost or stolen and the thief removes your other devices, the "
                    + "account cannot be taken back (found a new one, and be invited again)."
            )
            return
        }
        print("")
        print("Your recovery code (write it down and keep it away from this machine; it is shown only now):")
        print("")
        print("    \(words)")
        print("")
        // 12 words of at most 8 letters fit any QR code this node draws (at most 271 bytes).
        if let qr = try? QRCode(encoding: words) { print(qr.terminalText()) }
        print(
            "It ranks above every device of the account: with it a new device can remove any of them, even one "
                + "that removed all the others."
        )
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show this node's identity, what it holds, and any forks detected."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    struct Result: Encodable {
        struct Node: Encodable {
            @Nullable var id: AuthorID?
            /// The person's account, once this node holds it (PROTOCOL.md §2.10).
            @Nullable var account: AccountID?
            /// The account's devices now, this node among them.
            let devices: [AuthorID]
            @Nullable var name: String?
            /// Why the identity key cannot be used, if it cannot.
            @Nullable var identityError: String?
        }
        let node: Node
        let dataDirectory: String
        /// LAN discovery in the running node (state `stopped` when no node runs).
        let discovery: DiscoveryJSON
        let store: StoreCountsJSON
        let forks: [ForkJSON]
        /// Peers met, and how many of them have a session with the running node now.
        let peers: PeerCounts
        /// Posts followed, and unread notifications.
        let following: FollowCounts
    }

    struct PeerCounts: Encodable {
        let known: Int
        let connected: Int
    }

    struct FollowCounts: Encodable {
        let posts: Int
        let unreadNotifications: Int
    }

    func run() async throws {
        let context = try options.open()
        // A broken key must not hide what the store holds: show both.
        var author: AuthorID?
        var identityError: String?
        var name: String?
        do {
            author = try context.existingIdentity()?.author
        } catch {
            identityError = "\(error)"
        }
        if let author { name = try await context.store.displayName(of: author) }
        var account: AccountMembership?
        if let author { account = try await context.store.account(of: author) }
        let met = try await context.store.peers()
        let discovery = DiscoveryQuery.status(of: context.directory)
        let counts = try await context.store.counts()
        let forks = try await context.store.forks()
        let result = Result(
            node: Result.Node(
                id: author,
                account: account?.account,
                devices: account?.devices ?? [],
                name: name,
                identityError: identityError
            ),
            dataDirectory: context.directory.path,
            discovery: DiscoveryJSON(discovery),
            store: StoreCountsJSON(counts),
            forks: forks.map(ForkJSON.init),
            peers: PeerCounts(known: met.count, connected: met.filter { $0.state == "connected" }.count),
            following: FollowCounts(
                posts: try await context.store.followedPosts().count,
                unreadNotifications: try await context.store.unreadNotificationCount()
            )
        )
        if output.json { return try Output.json(result) }
        Self.printIdentity(author: author, name: name, identityError: identityError)
        if let account {
            print("account:  \(account.account.hex) (\(plural(account.devices.count, "device")))")
        }
        print("data:     \(result.dataDirectory)")
        print(
            "holds:    \(counts.posts) posts, \(counts.comments) comments, \(counts.records) records from \(counts.authors) authors"
        )
        print(
            "photos:   \(counts.photos) (\(ByteCountFormatter.string(fromByteCount: counts.photoBytes, countStyle: .file)))"
        )
        print("discovery: \(DiscoveryQuery.describe(discovery))")
        print("peers:    \(result.peers.connected) connected, \(result.peers.known) met")
        print(
            "follows:  \(plural(result.following.posts, "post")), "
                + "\(plural(result.following.unreadNotifications, "unread notification"))"
        )
        Self.printForks(forks)
    }

    /// The text lines for the node's identity: its id (or why its key cannot be used, or how to make one), and its
    /// name when it has an id.
    static func printIdentity(author: AuthorID?, name: String?, identityError: String?) {
        if let identityError {
            print("node id:  unusable: \(identityError)")
        } else {
            print("node id:  \(author?.hex ?? "none yet: run 'continuum-node init --name NAME' to make one")")
        }
        if author != nil {
            print("name:     \(name ?? "(none; set one with 'continuum-node init --name NAME')")")
        }
    }

    /// The text lines for the forks detected: none, or how many and one line for each.
    static func printForks(_ forks: [ForkSummary]) {
        if forks.isEmpty {
            print("forks:    none")
        } else {
            print("forks:    \(forks.count) detected (refused records kept as evidence)")
            for fork in forks {
                print(
                    "  author \(fork.author.short) seq \(fork.sequence): refused \(fork.refused.short), kept \(fork.kept.short): \(fork.reason)"
                )
            }
        }
    }
}
