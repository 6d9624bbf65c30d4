import ArgumentParser
import ContinuumCore
import ContinuumDiscovery
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

    func validate() throws {
        if let name, TextRules.isBlank(name) { throw ValidationError("--name is blank; give a display name") }
    }

    struct Result: Encodable {
        let id: AuthorID
        let name: String?
        let created: Bool
        let dataDirectory: String

        enum CodingKeys: String, CodingKey {
            case id, name, created, dataDirectory
        }

        /// Absent values are `null`, never missing keys.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            try container.encode(created, forKey: .created)
            try container.encode(dataDirectory, forKey: .dataDirectory)
        }
    }

    func run() async throws {
        let context = try options.open()
        let (identity, created) = try IdentityFile.loadOrCreate(at: context.directory.identityURL)
        var current = try await context.store.displayName(of: identity.author)
        if let name, name != current {
            _ = try await context.store.append(.profile(name: name), by: identity)
            context.tellRunningNode()
            current = name
        }
        let result = Result(id: identity.author, name: current, created: created, dataDirectory: context.directory.path)
        if output.json { return try Output.json(result) }
        print(created ? "Created a new identity." : "Identity already exists.")
        print("node id: \(identity.author.hex)")
        print("name:    \(current ?? "(none; set one with --name)")")
        print("data:    \(context.directory.path)")
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
            let id: AuthorID?
            let name: String?
            /// Why the identity key cannot be used, if it cannot.
            let identityError: String?

            enum CodingKeys: String, CodingKey {
                case id, name, identityError
            }

            /// Absent values are `null`, never missing keys.
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(id, forKey: .id)
                try container.encode(name, forKey: .name)
                try container.encode(identityError, forKey: .identityError)
            }
        }
        let node: Node
        let dataDirectory: String
        /// LAN discovery in the running node (state `stopped` when no node runs).
        let discovery: DiscoveryStatus
        let store: StoreCounts
        let forks: [ForkSummary]
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
            author = try context.identity().author
        } catch {
            identityError = "\(error)"
        }
        if let author { name = try await context.store.displayName(of: author) }
        let node = Result.Node(id: author, name: name, identityError: identityError)
        let met = try await context.store.peers()
        let result = Result(
            node: node,
            dataDirectory: context.directory.path,
            discovery: DiscoveryQuery.status(of: context.directory),
            store: try await context.store.counts(),
            forks: try await context.store.forks(),
            peers: PeerCounts(known: met.count, connected: met.filter { $0.state == "connected" }.count),
            following: FollowCounts(
                posts: try await context.store.followedPosts().count,
                unreadNotifications: try await context.store.unreadNotificationCount()
            )
        )
        if output.json { return try Output.json(result) }
        print("node id:  \(author?.hex ?? "unusable: \(node.identityError ?? "")")")
        if author != nil {
            print("name:     \(node.name ?? "(none; set one with 'continuum-node init --name NAME')")")
        }
        let counts = result.store
        print("data:     \(result.dataDirectory)")
        print(
            "holds:    \(counts.posts) posts, \(counts.comments) comments, \(counts.records) records from \(counts.authors) authors"
        )
        print(
            "photos:   \(counts.photos) (\(ByteCountFormatter.string(fromByteCount: counts.photoBytes, countStyle: .file)))"
        )
        print("discovery: \(DiscoveryQuery.describe(result.discovery))")
        print("peers:    \(result.peers.connected) connected, \(result.peers.known) met")
        print(
            "follows:  \(plural(result.following.posts, "post")), "
                + "\(plural(result.following.unreadNotifications, "unread notification"))"
        )
        if result.forks.isEmpty {
            print("forks:    none")
        } else {
            print("forks:    \(result.forks.count) detected (refused records kept as evidence)")
            for fork in result.forks {
                print(
                    "  author \(fork.author.short) seq \(fork.sequence): refused \(fork.refused.short), kept \(fork.kept.short): \(fork.reason)"
                )
            }
        }
    }
}
