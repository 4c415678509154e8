using System.Buffers;
using System.Linq.Expressions;
using System.Reflection;
using ProtoBuf;
using ProtoBuf.Meta;
using Quintet.Components;

namespace Quintet.Manager.Packages;

/// <summary>One operation of a contract, ready to call: its wire name, its message types and a compiled invoker.</summary>
internal sealed class ComponentOperation
{
    private readonly OperationCodec _codec;

    public ComponentOperation(string name, MethodInfo method, Type requestType, Type responseType, TypeModel model, bool isStream = false)
    {
        Name = name;
        Method = method;
        RequestType = requestType;
        ResponseType = responseType;
        IsStream = isStream;
        Model = model;

        // A subscription is served from the instance's event log: the component's method is never called.
        _codec = (OperationCodec)Activator.CreateInstance(typeof(OperationCodec<,>).MakeGenericType(requestType, responseType), isStream ? null : method, model)!;
    }

    /// <summary>
    /// Whether the operation is a subscription to the instance's events (<c>IAsyncEnumerable&lt;TEvent&gt;</c>): served
    /// as a gRPC server-streaming method from the event log, with <see cref="ResponseType"/> the event's type.
    /// </summary>
    public bool IsStream { get; }

    /// <summary>The operation's name on the wire (the method's name without <c>Async</c>).</summary>
    public string Name { get; }

    public MethodInfo Method { get; }

    public Type RequestType { get; }

    public Type ResponseType { get; }

    /// <summary>The package's protobuf-net model its messages go through.</summary>
    public TypeModel Model { get; }

    /// <summary>
    /// The roles that open this operation (<see cref="ComponentRolesAttribute"/>): its own, else its contract's, else its
    /// class's; empty when none of them declares any.
    /// </summary>
    public IReadOnlyList<string> Roles { get; init; } = [];

    /// <summary>Where <see cref="Roles"/> were declared: <c>operation</c>, <c>contract</c> or <c>component</c>; empty when nowhere.</summary>
    public string RolesDeclaredOn { get; init; } = string.Empty;

    /// <summary>
    /// Whether calls that carry a client identity keep a completion record (so that a retry is answered from it); false
    /// for an operation marked <see cref="ReadOnlyOperationAttribute"/>.
    /// </summary>
    public bool KeepsCompletionRecords { get; init; } = true;

    /// <summary>For an operation of a management contract: how the console presents it and who may run it; null otherwise.</summary>
    public ManagementOperation? Management { get; init; }

    /// <summary>Reads a request; a malformed one throws <see cref="ProtoException"/> or <see cref="EndOfStreamException"/>.</summary>
    public object ReadRequest(ReadOnlySequence<byte> bytes) => _codec.Read(bytes);

    /// <summary>Writes a request, as a caller would send it (the admin API's management calls).</summary>
    public byte[] WriteRequest(object request) => _codec.WriteRequest(request);

    /// <summary>Reads a response, as a caller would (the admin API's management calls).</summary>
    public object ReadResponse(ReadOnlyMemory<byte> bytes) => _codec.ReadResponse(bytes);

    /// <summary>Writes a response (an empty one for null).</summary>
    public void WriteResponse(IBufferWriter<byte> writer, object? response) => _codec.Write(writer, response);

    public Task<object?> InvokeAsync(object component, object request, CancellationToken cancellationToken) =>
        _codec.InvokeAsync(component, request, cancellationToken);

    /// <summary>
    /// The operation's messages and call, typed once at load: protobuf-net's generic methods reach the type's
    /// serializer directly, where the methods taking a <see cref="Type"/> look it up on every message.
    /// </summary>
    private abstract class OperationCodec
    {
        public abstract object Read(ReadOnlySequence<byte> bytes);

        public abstract void Write(IBufferWriter<byte> writer, object? response);

        public abstract byte[] WriteRequest(object request);

        public abstract object ReadResponse(ReadOnlyMemory<byte> bytes);

        public abstract Task<object?> InvokeAsync(object component, object request, CancellationToken cancellationToken);
    }

    private sealed class OperationCodec<TRequest, TResponse> : OperationCodec
        where TRequest : class
        where TResponse : class
    {
        private readonly TypeModel _model;
        private readonly Func<object, TRequest, CancellationToken, Task<TResponse>>? _invoke;

        public OperationCodec(MethodInfo? method, TypeModel model)
        {
            _model = model;
            _invoke = method is null ? null : CompileInvoker(method);
            Prepare<TRequest>(model);
            Prepare<TResponse>(model);
        }

        /// <summary>
        /// Inspects the message type and builds its serializer now, at load, under no call's deadline: the first call would
        /// otherwise do it under the model's lock, and a thread waiting on that lock while the manager was paused
        /// (SIGSTOP, a long collection) fails with "Timeout while inspecting metadata" once it resumes.
        /// </summary>
        private static void Prepare<T>(TypeModel model)
            where T : class
        {
            try
            {
                var buffer = new ArrayBufferWriter<byte>();
                model.Serialize(buffer, Activator.CreateInstance<T>());
                _ = model.Deserialize<T>(buffer.WrittenMemory);
            }
            catch (Exception e) when (e is ProtoBuf.ProtoException or InvalidOperationException or NotSupportedException or ArgumentException)
            {
                // A message whose default instance cannot go through (a required member left empty) is prepared by its
                // first real call instead, which also says what is wrong with it if anything is.
            }
        }

        public override object Read(ReadOnlySequence<byte> bytes) => _model.Deserialize<TRequest>(bytes) ?? Activator.CreateInstance<TRequest>();

        public override void Write(IBufferWriter<byte> writer, object? response) => _model.Serialize(writer, (TResponse?)response ?? Activator.CreateInstance<TResponse>());

        public override byte[] WriteRequest(object request)
        {
            var buffer = new ArrayBufferWriter<byte>();
            _model.Serialize(buffer, (TRequest)request);
            return buffer.WrittenSpan.ToArray();
        }

        public override object ReadResponse(ReadOnlyMemory<byte> bytes) => _model.Deserialize<TResponse>(bytes) ?? Activator.CreateInstance<TResponse>();

        public override Task<object?> InvokeAsync(object component, object request, CancellationToken cancellationToken)
        {
            var invoke = _invoke ?? throw new InvalidOperationException("A subscription is served from the instance's event log, not called.");
            var task = invoke(component, (TRequest)request, cancellationToken);

            // Most operations of a keyed instance finish without waiting: their answer needs no state machine.
            return task.IsCompletedSuccessfully ? Task.FromResult<object?>(task.Result) : AwaitAsync(task);
        }

        private static async Task<object?> AwaitAsync(Task<TResponse> task) => await task.ConfigureAwait(false);

        /// <summary>Compiles <c>(c, r, t) =&gt; ((IContract)c).MethodAsync(r, t)</c> once, at load: no reflection on the call path.</summary>
        private static Func<object, TRequest, CancellationToken, Task<TResponse>> CompileInvoker(MethodInfo method)
        {
            var component = Expression.Parameter(typeof(object), "component");
            var request = Expression.Parameter(typeof(TRequest), "request");
            var token = Expression.Parameter(typeof(CancellationToken), "cancellationToken");
            var call = Expression.Call(Expression.Convert(component, method.DeclaringType!), method, request, token);
            return Expression.Lambda<Func<object, TRequest, CancellationToken, Task<TResponse>>>(call, component, request, token).Compile();
        }
    }
}

/// <summary>A contract a component class serves: its service name and operations.</summary>
internal sealed class ComponentContract(string serviceName, Type interfaceType, IReadOnlyDictionary<string, ComponentOperation> operations)
{
    /// <summary>
    /// The contract as a proto3 file: its messages and its service, named so that the gRPC path of each method is the
    /// one this manager serves (<c>/{service name}/{operation}</c>).
    /// </summary>
    public string ExportProto()
    {
        var lastDot = ServiceName.LastIndexOf('.');
        var options = new SchemaGenerationOptions
        {
            Syntax = ProtoSyntax.Proto3,
            Package = lastDot > 0 ? ServiceName[..lastDot] : null,
        };
        var service = new Service { Name = lastDot > 0 ? ServiceName[(lastDot + 1)..] : ServiceName };
        foreach (var operation in Operations.Values.OrderBy(o => o.Name, StringComparer.Ordinal))
        {
            service.Methods.Add(new ServiceMethod { Name = operation.Name, InputType = operation.RequestType, OutputType = operation.ResponseType, ServerStreaming = operation.IsStream });
            options.Types.Add(operation.RequestType);
            options.Types.Add(operation.ResponseType);
        }

        options.Services.Add(service);
        var schema = RuntimeTypeModel.Create().GetSchema(options);

        // A subscriber reads each event's position from a field the managers put before the event's own (EventFrames).
        foreach (var eventType in Operations.Values.Where(o => o.IsStream).Select(o => o.ResponseType).Distinct())
        {
            var protoName = eventType.GetCustomAttribute<ProtoContractAttribute>()?.Name is { Length: > 0 } named ? named : eventType.Name;
            var declaration = $"message {protoName} {{";
            var at = schema.IndexOf(declaration, StringComparison.Ordinal);
            if (at >= 0)
            {
                var field = $"\n   // The event's position in the instance's event log (1, 2, 3, ...): resume after it with the header {Quintet.Protocol.CallHeaders.EventsAfter}.\n   uint64 {Quintet.Protocol.EventFrames.PositionFieldName} = {Quintet.Protocol.EventFrames.PositionField};";
                schema = schema.Insert(at + declaration.Length, field);
            }
        }

        return schema;
    }

    public string ServiceName { get; } = serviceName;

    public Type InterfaceType { get; } = interfaceType;

    public IReadOnlyDictionary<string, ComponentOperation> Operations { get; } = operations;

    /// <summary>The roles that open the contract's operations that declare none: its own, else its class's; empty when neither declares any.</summary>
    public IReadOnlyList<string> Roles { get; init; } = [];

    /// <summary>The panel's title when the contract is a management module (<see cref="ManagementContractAttribute"/>); null for a client's contract.</summary>
    public string? ManagementTitle { get; init; }
}

/// <summary>
/// One operation of a management contract: a view (it changes nothing) or an action, the least administrative role
/// that runs it, and what the console shows of it.
/// </summary>
/// <param name="IsView">Whether it only reads the instance (<see cref="ReadOnlyOperationAttribute"/>).</param>
/// <param name="Role">The least role that runs it: <c>reader</c>, <c>operator</c> or <c>admin</c>.</param>
/// <param name="Label">The label the console shows.</param>
/// <param name="Description">One sentence on it; empty when the package gives none.</param>
/// <param name="Confirmation">The question asked before an action runs; empty for none.</param>
/// <param name="Fields">The request's fields, which the console asks for.</param>
internal sealed record ManagementOperation(bool IsView, string Role, string Label, string Description, string Confirmation, IReadOnlyList<ManagementField> Fields);

/// <summary>A field of a management operation's request: its JSON name and kind (<c>string</c>, <c>integer</c>, <c>number</c>, <c>boolean</c>, <c>enum</c>) and, for an enum, its values.</summary>
internal sealed record ManagementField(string Name, string Kind, IReadOnlyList<string> Values);

/// <summary>A component class of a deployed package.</summary>
internal sealed class ComponentClass(string name, Type type, IReadOnlyList<ComponentContract> contracts, Func<Component> create)
{
    // Read on call paths while the admin API may replace it: volatile so that a new spec is seen at once, whole.
    private volatile QosSpec _qos = QosSpec.Default;

    public string Name { get; } = name;

    /// <summary>The class's QoS: from the package's QoS file at load (<see cref="QosSpec.Default"/> if it is not listed), replaceable at run time.</summary>
    public QosSpec Qos
    {
        get => _qos;
        set => _qos = value ?? throw new ArgumentNullException(nameof(value));
    }

    public Type Type { get; } = type;

    public IReadOnlyList<ComponentContract> Contracts { get; } = contracts;

    /// <summary>The name of the package the class belongs to: whose role assignments its calls are checked against.</summary>
    public string PackageName { get; init; } = string.Empty;

    /// <summary>The roles the class itself declares (<see cref="ComponentRolesAttribute"/>); empty when none.</summary>
    public IReadOnlyList<string> Roles { get; init; } = [];

    /// <summary>
    /// Whether the class's package declares roles anywhere (on any class, contract or operation): then every call on the
    /// class is checked, and an operation that answers to no role admits no client. Set once, when the package is loaded.
    /// </summary>
    public bool PackageDeclaresRoles { get; set; }

    public Component CreateInstance() => create();

    /// <summary>Decides the keys (and optionally the managers) of fresh instances.</summary>
    public IClassFactory Factory { get; init; } = DefaultClassFactory.Instance;

    /// <summary>The class's debug module (<see cref="ComponentDebugModuleAttribute"/>); null when it names none.</summary>
    public ComponentDebugModule? DebugModule { get; init; }
}

/// <summary>The factory of a class whose manifest names none: GUID keys, placement by the QoS spec.</summary>
internal sealed class DefaultClassFactory : ClassFactory<Component>
{
    public static readonly DefaultClassFactory Instance = new();
}
