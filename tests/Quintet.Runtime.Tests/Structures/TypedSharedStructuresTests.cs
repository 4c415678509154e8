using ProtoBuf;
using Quintet.Components;
using Quintet.Runtime.Structures;

namespace Quintet.Runtime.Tests.Structures;

/// <summary>
/// The typed views of the shared structures: a component's own <c>[ProtoContract]</c> values through the replicated
/// structures, read on another replica, still readable as bytes, and a clear error for bytes that are not a
/// <c>T</c>. Two managers are played by two <see cref="SharedStructures"/> on one manager's groups, as in
/// <see cref="SharedStructureLimitsTests"/>.
/// </summary>
public sealed class TypedSharedStructuresTests(SingleManagerHost manager) : IClassFixture<SingleManagerHost>
{
    private static readonly TimeSpan Bound = TimeSpan.FromMinutes(2);

    [ProtoContract]
    public sealed class Price
    {
        [ProtoMember(1)]
        public string Sku { get; set; } = string.Empty;

        [ProtoMember(2)]
        public long Cents { get; set; }

        [ProtoMember(3)]
        public List<string> Tags { get; set; } = [];
    }

    public sealed class NotAContract
    {
        public int Value { get; set; }
    }

    private static string Name(string kind) => $"typed-{kind}-" + Guid.NewGuid().ToString("N");

    [Fact]
    public async Task A_typed_dictionary_writes_linearizably_reads_locally_and_on_another_replica_and_keeps_the_byte_api()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var one = new SharedStructures(manager.Groups);
        await using var two = new SharedStructures(manager.Groups);
        var name = Name("dictionary");
        ISharedStructures first = one, second = two;
        var prices = await first.DictionaryAsync<Price>(name, timeout.Token);
        var elsewhere = await second.DictionaryAsync<Price>(name, timeout.Token);

        Assert.False(prices.TryGet("a", out _));
        Assert.Null(await prices.GetLinearizableAsync("a", timeout.Token));
        await prices.SetAsync("a", new Price { Sku = "a", Cents = 150, Tags = ["x", "y"] }, timeout.Token);

        // The writer's replica has applied its own completed update: a local read sees it.
        Assert.True(prices.TryGet("a", out var local));
        Assert.Equal(("a", 150L), (local.Sku, local.Cents));
        Assert.Equal(["x", "y"], local.Tags);

        // The other replica: linearizable read sees it at once, and its local read from then on.
        var fresh = await elsewhere.GetLinearizableAsync("a", timeout.Token);
        Assert.Equal(150, fresh!.Cents);
        Assert.True(elsewhere.TryGet("a", out var there) && there.Cents == 150);
        Assert.Equal(1, elsewhere.Count);

        // Conditional writes compare encodings: the value as read matches, another does not.
        Assert.False(await elsewhere.TryAddAsync("a", new Price { Sku = "a", Cents = 1 }, timeout.Token));
        Assert.False(await elsewhere.TryUpdateAsync("a", new Price { Sku = "a", Cents = 999 }, new Price { Sku = "a", Cents = 2 }, timeout.Token));
        Assert.True(await elsewhere.TryUpdateAsync("a", fresh, new Price { Sku = "a", Cents = 175 }, timeout.Token));
        Assert.Equal(175, (await prices.GetLinearizableAsync("a", timeout.Token))!.Cents);

        // The bytes stay available, and are the value's protobuf encoding.
        Assert.True(prices.Bytes.TryGet("a", out var bytes));
        Assert.Equal(175, ProtoValue.Decode<Price>(bytes).Cents);
        Assert.Equal(bytes.ToArray(), ProtoValue.Encode(new Price { Sku = "a", Cents = 175 }));

        Assert.False(await prices.TryRemoveAsync("a", new Price { Sku = "a", Cents = 150 }, timeout.Token));
        Assert.True(await prices.TryRemoveAsync("a", new Price { Sku = "a", Cents = 175 }, timeout.Token));
        Assert.Null(await elsewhere.GetLinearizableAsync("a", timeout.Token));
        Assert.False(await prices.RemoveAsync("a", timeout.Token));
    }

    [Fact]
    public async Task A_stored_value_that_is_not_a_T_is_refused_with_an_error_naming_the_entry_the_dictionary_and_the_type()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var structures = new SharedStructures(manager.Groups);
        var name = Name("mismatch");
        var prices = await ((ISharedStructures)structures).DictionaryAsync<Price>(name, timeout.Token);

        // Field 1 with wire type 0 (a varint) where Price has a string: not a Price.
        await prices.Bytes.SetAsync("bad", new byte[] { 0x08, 0x96, 0x01 }, timeout.Token);
        var local = Assert.Throws<ProtoValueException>(() => prices.TryGet("bad", out _));
        Assert.Contains("'bad'", local.Message, StringComparison.Ordinal);
        Assert.Contains($"'{name}'", local.Message, StringComparison.Ordinal);
        Assert.Contains(typeof(Price).FullName!, local.Message, StringComparison.Ordinal);
        Assert.Equal(typeof(Price), local.ValueType);
        var fresh = await Assert.ThrowsAsync<ProtoValueException>(() => prices.GetLinearizableAsync("bad", timeout.Token));
        Assert.Contains("byte API", fresh.Message, StringComparison.Ordinal);

        // A string dictionary over the same entries: UTF-8, and invalid UTF-8 is refused the same way.
        var texts = await ((ISharedStructures)structures).DictionaryAsync<string>(name, timeout.Token);
        await texts.SetAsync("text", "héllo", timeout.Token);
        Assert.True(texts.Bytes.TryGet("text", out var utf8) && utf8.Span.SequenceEqual("héllo"u8));
        Assert.True(texts.TryGet("text", out var text) && text == "héllo");
        await texts.Bytes.SetAsync("binary", new byte[] { 0xff, 0xfe }, timeout.Token);
        Assert.Throws<ProtoValueException>(() => texts.TryGet("binary", out _));

        // A type that is not a contract is refused before anything is written.
        var wrong = await ((ISharedStructures)structures).DictionaryAsync<NotAContract>(name, timeout.Token);
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => wrong.SetAsync("x", new NotAContract(), timeout.Token));
        Assert.Contains("[ProtoContract]", refused.Message, StringComparison.Ordinal);
        Assert.False(wrong.Bytes.TryGet("x", out _));
    }

    [Fact]
    public async Task Updates_by_compare_and_set_from_two_replicas_apply_each_to_the_value_it_was_computed_from()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var one = new SharedStructures(manager.Groups);
        await using var two = new SharedStructures(manager.Groups);
        var name = Name("update");
        var first = await ((ISharedStructures)one).DictionaryAsync<Price>(name, timeout.Token);
        var second = await ((ISharedStructures)two).DictionaryAsync<Price>(name, timeout.Token);

        // Concurrent read-modify-writes from both replicas: none is lost, as a plain read then set would lose some.
        static Price Add(Price? price) => new() { Sku = "n", Cents = (price?.Cents ?? 0) + 1 };
        await Task.WhenAll(Enumerable.Range(0, 20).Select(i => (i % 2 == 0 ? first : second).UpdateAsync("n", Add, timeout.Token)));
        Assert.Equal(20, (await second.GetLinearizableAsync("n", timeout.Token))!.Cents);

        // A throw changes nothing (a fenced write refusing a later epoch); null removes the entry.
        await Assert.ThrowsAsync<StaleFencingTokenException>(() => first.UpdateAsync("n", p => throw new StaleFencingTokenException(1, p!.Cents), timeout.Token));
        Assert.Equal(20, (await first.GetLinearizableAsync("n", timeout.Token))!.Cents);
        Assert.Null(await first.UpdateAsync("n", _ => null, timeout.Token));
        Assert.Null(await second.GetLinearizableAsync("n", timeout.Token));
        Assert.Null(await second.UpdateAsync("absent", _ => null, timeout.Token));
    }

    [Fact]
    public async Task A_typed_set_holds_members_by_their_encoding_and_reads_them_back_on_another_replica()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var one = new SharedStructures(manager.Groups);
        await using var two = new SharedStructures(manager.Groups);
        var name = Name("set");
        var set = await ((ISharedStructures)one).SetAsync<Price>(name, timeout.Token);
        var elsewhere = await ((ISharedStructures)two).SetAsync<Price>(name, timeout.Token);

        Assert.True(await set.AddAsync(new Price { Sku = "a", Cents = 1 }, timeout.Token));
        Assert.False(await set.AddAsync(new Price { Sku = "a", Cents = 1 }, timeout.Token));
        Assert.True(await set.AddAsync(new Price { Sku = "b", Cents = 2 }, timeout.Token));
        Assert.True(set.Contains(new Price { Sku = "a", Cents = 1 }));
        Assert.False(set.Contains(new Price { Sku = "a", Cents = 2 }));
        Assert.True(await elsewhere.ContainsLinearizableAsync(new Price { Sku = "b", Cents = 2 }, timeout.Token));
        Assert.Equal(["a", "b"], elsewhere.Snapshot().Select(p => p.Sku).Order(StringComparer.Ordinal));
        Assert.True(await elsewhere.RemoveAsync(new Price { Sku = "a", Cents = 1 }, timeout.Token));
        Assert.False(await set.ContainsLinearizableAsync(new Price { Sku = "a", Cents = 1 }, timeout.Token));

        // Strings are members as they are, the same as through the string API.
        var names = await ((ISharedStructures)one).SetAsync<string>(Name("names"), timeout.Token);
        Assert.True(await names.AddAsync("alice", timeout.Token));
        Assert.True(names.Bytes.Contains("alice"));

        // A member added through the string API that is no encoded Price is named in the error.
        await set.Bytes.AddAsync("not base64!", timeout.Token);
        var refused = Assert.Throws<ProtoValueException>(() => set.Snapshot());
        Assert.Contains("'not base64!'", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_typed_queue_hands_out_items_once_leases_them_with_a_fencing_token_and_names_an_item_that_is_not_a_T()
    {
        using var timeout = new CancellationTokenSource(Bound);
        await using var one = new SharedStructures(manager.Groups);
        await using var two = new SharedStructures(manager.Groups);
        var name = Name("queue");
        var queue = await ((ISharedStructures)one).QueueAsync<Price>(name, timeout.Token);
        var elsewhere = await ((ISharedStructures)two).QueueAsync<Price>(name, timeout.Token);

        Assert.Null(await queue.TryDequeueAsync(timeout.Token));
        var first = await queue.EnqueueAsync(new Price { Sku = "a" }, timeout.Token);
        await queue.EnqueueAsync(new Price { Sku = "b" }, timeout.Token);
        await queue.EnqueueAsync(new Price { Sku = "c" }, timeout.Token);
        Assert.True(queue.TryPeek(out var head) && head.Id == first && head.Value.Sku == "a");

        var taken = await elsewhere.DequeueAsync(timeout.Token);
        Assert.Equal((first, "a"), (taken.Id, taken.Value.Sku));
        var lease = await queue.TakeAsync(TimeSpan.FromMinutes(1), timeout.Token);
        Assert.Equal("b", lease.Item.Value.Sku);
        Assert.True(await queue.ReleaseAsync(lease, timeout.Token));
        var again = await elsewhere.TryTakeAsync(TimeSpan.FromMinutes(1), timeout.Token);
        Assert.Equal("b", again!.Item.Value.Sku);
        Assert.True(again.Token > lease.Token, $"token {again.Token} after {lease.Token}");
        Assert.True(await elsewhere.AcknowledgeAsync(again, timeout.Token));
        Assert.False(await queue.AcknowledgeAsync(lease, timeout.Token));
        Assert.Equal("c", (await queue.TryDequeueAsync(timeout.Token))!.Value.Sku);

        var bad = await queue.Bytes.EnqueueAsync(new byte[] { 0x0a, 0x05, 0x61 }, timeout.Token);
        var refused = await Assert.ThrowsAsync<ProtoValueException>(() => elsewhere.DequeueAsync(timeout.Token));
        Assert.Contains($"item {bad}", refused.Message, StringComparison.OrdinalIgnoreCase);
        Assert.Contains($"'{name}'", refused.Message, StringComparison.Ordinal);
    }
}
