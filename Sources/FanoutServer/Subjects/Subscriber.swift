/// What the subject index needs of a member: a scratch mark to count it once per publish.
public protocol Subscriber: AnyObject {
    /// Set by `SubjectIndex.collectReceivers` to the publish's mark; a member already carrying the mark is
    /// not collected again, which gives set semantics without a per-publish hash set.
    var deliveryMark: UInt64 { get set }
}
