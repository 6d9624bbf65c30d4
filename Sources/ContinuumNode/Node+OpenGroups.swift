import ContinuumCore
import ContinuumDiscovery
import ContinuumStore
import ContinuumSync
import Foundation

// Open groups on the LAN (PROTOCOL.md §6, §5.1): this node announces the open groups it is in, and joins one that
// another node announces when asked (`join NAME`) or, with `run --join-open`, by itself.

extension Node {
    /// Keeps discovery's announcement in step with the open groups this node is in (checked every 2 s: a group
    /// created or joined by another process shows up without a restart).
    func announceOpenGroups(_ discovery: any PeerDiscovery) async {
        var failing = false
        while !Task.isCancelled {
            do {
                let groups = try await store.groups()
                let open = groups.filter { $0.open && !$0.network }.compactMap { group in
                    group.name.map { AnnouncedGroup(id: group.id, name: $0) }
                }.sorted { $0.name < $1.name }
                // Every time: discovery applies only a change, and tries again one that failed.
                discovery.announce(openGroups: Array(open.prefix(AnnouncedGroup.maxAnnounced)))
                failing = false
            } catch {
                // The last announcement stands until the store can be read again (2 s later); logged once a streak.
                if !failing && !(error is CancellationError) {
                    logger.warning("reading the open groups to announce failed", metadata: ["error": "\(error)"])
                }
                failing = true
            }
            try? await Task.sleep(for: .seconds(2))
        }
    }

    /// Joins the open group announced on the LAN whose name is `text` (or whose id starts with it): a new log key
    /// adds itself, and the nodes that announce it are dialled at once. Throws ``JoinFailure`` with what is nearby.
    public func joinOpen(_ text: String) async throws -> GroupID {
        let status = discoveryStatus
        guard status.state == .on else {
            throw JoinFailure(
                description:
                    "'\(text)' is not an invite code, and LAN discovery is \(status.state.rawValue) here, so no "
                    + "open group nearby is known"
            )
        }
        let nearby = status.openGroups
        // One candidate per group, however many nodes announce it.
        var ids: [GroupID] = []
        for announced in nearby where !ids.contains(announced.group.id) { ids.append(announced.group.id) }
        let candidates = ids.map { id in
            let announcers = nearby.filter { $0.group.id == id }
            return IDCandidate(announcers, ids: [id], names: announcers.map(\.group.name))
        }
        let announcers: [NearbyOpenGroup]
        do {
            announcers = try IDLookup.resolve(text, among: candidates)
        } catch {
            let names = Set(nearby.map { "\($0.group.name) (\($0.group.id.short))" }).sorted()
            switch error {
            case .notAnID where text.isEmpty:
                throw JoinFailure(description: error.description)
            case .notAnID, .notFound:
                throw JoinFailure(
                    description: "'\(text)' is not an invite code, and no open group of that name is announced on "
                        + "the LAN" + (names.isEmpty ? " (none is, now)" : "; nearby: \(names.joined(separator: ", "))")
                )
            case .ambiguous(_, let matches):
                throw JoinFailure(
                    description:
                        "\(matches.count) open groups nearby match '\(text)': \(names.joined(separator: ", "));"
                        + " give the start of the id"
                )
            }
        }
        // The announcement under the name typed, if any: its name is the one the group is stored under.
        let first = announcers.first { $0.group.name == text } ?? announcers[0]
        try await join(first.group, announcers: announcers)
        return first.group.id
    }

    /// A peer found on the LAN announces open groups: with `--join-open`, this node joins the first of them while it
    /// is in no group of its own (network groups aside).
    func found(_ peer: DiscoveredPeer) async {
        // One at a time: peers found together must not each pass the check below and join a group of their own.
        guard configuration.joinOpen, let group = peer.openGroups.first,
            openJoin.withLockedValue({ busy in
                defer { busy = true }
                return !busy
            })
        else { return }
        defer { openJoin.withLockedValue { $0 = false } }
        let groups: [GroupSummary]
        do {
            groups = try await store.groups()
        } catch {
            // Errs on the side of not joining: a join cannot be undone, and the store cannot say whether this node is
            // in a group of its own already.
            logger.warning("reading the groups failed; not joining an open group", metadata: ["error": "\(error)"])
            return
        }
        guard !groups.contains(where: { !$0.network }) else { return }
        let announcer = NearbyOpenGroup(group: group, node: peer.node, host: peer.host, port: peer.port)
        do {
            try await join(group, announcers: [announcer])
            logger.notice(
                "joined an open group found on the LAN (--join-open)",
                metadata: ["group": "\(group.name)", "group.id": "\(group.id.short)", "peer.id": "\(peer.node.short)"]
            )
        } catch {
            logger.warning("joining an open group failed", metadata: ["group": "\(group.name)", "error": "\(error)"])
        }
    }

    private func join(_ group: AnnouncedGroup, announcers: [NearbyOpenGroup]) async throws {
        guard try await store.joinOpen(AnnouncedGroupRef(id: group.id, name: group.name), by: identity) else {
            throw JoinFailure(
                description: "this node is in the open group \(group.name) already (or was removed from it)"
            )
        }
        await engine.refreshMembership()
        await engine.recordsWritten()
        // The announcers refused this node a moment ago (it shared no group), and their dialers back off: dial now.
        for announcer in announcers where !(await engine.connectedPeers().contains(announcer.node)) {
            let address = PeerAddress(host: announcer.host, port: Int(announcer.port))
            Task { _ = await self.network.connect(to: address, expected: announcer.node) }
        }
    }
}
