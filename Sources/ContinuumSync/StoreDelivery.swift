import ContinuumStore

/// The store's ``Delivery``, named apart from the session rules' own (ContinuumSession's) in files that see both.
typealias StoreDelivery = Delivery
